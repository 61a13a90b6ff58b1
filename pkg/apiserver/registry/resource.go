// Package registry describes the resources the apiserver serves. One generic
// REST handler serves them all; what differs per resource (defaults,
// validation, status handling, table columns, selectable fields) lives in a
// Strategy in registry/<resource>.
package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Strategy holds the rules for one resource's main endpoint.
type Strategy interface {
	// Default fills in defaulted fields. It runs on every object decoded from a
	// request (create, update, and the result of a patch), as upstream's
	// defaulting does at decode time.
	Default(obj runtime.Object)
	// PrepareForCreate resets what a client may not set on create (status,
	// generation) before validation.
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	// Validate checks a new object. ObjectMeta is validated by the caller.
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	// PrepareForUpdate keeps what the main endpoint may not change (status)
	// from old, and bumps metadata.generation when the spec changed.
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	// ValidateUpdate checks an update, immutable fields included.
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// StatusStrategy holds the rules for the status subresource.
type StatusStrategy interface {
	// PrepareForUpdate keeps everything but status (and, as upstream, labels
	// and annotations may change) from old.
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// Scaler reads and writes the replica count for the scale subresource.
type Scaler interface {
	// Scale returns spec replicas, status replicas and the label selector.
	Scale(obj runtime.Object) (spec, status int32, selector string)
	SetReplicas(obj runtime.Object, replicas int32)
}

// DeletionStrategy decides how an object is deleted.
type DeletionStrategy interface {
	// GracePeriod returns the grace period for deleting obj given the one
	// the client asked for (nil when none): pods default to their
	// terminationGracePeriodSeconds and go at once when never scheduled.
	GracePeriod(obj runtime.Object, requested *int64) int64
	// PrepareForDelete marks obj as being deleted (namespaces turn
	// Terminating) and reports whether it must stay until a spec finalizer
	// lets it go.
	PrepareForDelete(obj runtime.Object) (wait bool)
}

// TableConvertor renders objects as rows of `kubectl get`.
type TableConvertor interface {
	// Columns lists the columns; the first is Name. Columns with Priority 1
	// appear only with -o wide.
	Columns() []metav1.TableColumnDefinition
	// Cells returns one row's cells, in the order of Columns.
	Cells(obj runtime.Object) ([]interface{}, error)
}

// Allocator claims what an object holds outside its own key (a Service's
// cluster IPs and node ports), so that no two objects hold the same.
type Allocator interface {
	// Allocate fills in and claims what obj needs that old (nil on a
	// create) does not hold already, after validation and before the
	// write. With dryRun it checks without claiming anything.
	Allocate(ctx context.Context, obj, old runtime.Object, dryRun bool) (Allocation, error)
	// Release frees what a deleted object held.
	Release(ctx context.Context, obj runtime.Object)
}

// Allocation is what one Allocate claimed, settled once the write is done.
type Allocation interface {
	// Finish keeps what was claimed and frees what the old object held and
	// the new one no longer does when written is true; otherwise (a failed
	// or dry-run write) it frees what was claimed.
	Finish(ctx context.Context, written bool)
}

// AttrFunc returns an object's labels and its selectable fields
// (metadata.name and metadata.namespace are always among them).
type AttrFunc func(obj runtime.Object) (labels.Set, fields.Set, error)

// Resource is everything the server needs to serve one resource.
type Resource struct {
	GroupVersion schema.GroupVersion
	// Name is the plural resource name (pods); Singular its singular (pod).
	Name       string
	Singular   string
	Kind       string
	Namespaced bool
	ShortNames []string
	Categories []string

	New     func() runtime.Object
	NewList func() runtime.Object

	Strategy Strategy
	// Status is nil when the resource has no status subresource.
	Status StatusStrategy
	// Scale is nil when the resource has no scale subresource.
	Scale Scaler
	Table TableConvertor
	// Attrs returns selectable fields beyond metadata.name/namespace; nil
	// means just those two.
	Attrs AttrFunc
	// ValidateName checks metadata.name (prefix: a generateName); nil means
	// a DNS-1123 subdomain, as most resources require.
	ValidateName func(name string, prefix bool) []string
	// Finalize holds the rules of the namespaces/{name}/finalize subresource
	// (nil everywhere else).
	Finalize StatusStrategy
	// Deletion customizes graceful deletion; nil deletes at once (unless
	// finalizers hold the object).
	Deletion DeletionStrategy
	// ReturnDeletedObject answers a DELETE that removed the object with
	// its last state; otherwise, as upstream for most resources, with a
	// Success Status naming it. Objects that stay (graceful deletion,
	// finalizers) are always returned.
	ReturnDeletedObject bool
	// AllowCreateOnUpdate lets a PUT create an object that does not exist
	// (201), as upstream for leases, services, events, RBAC objects and
	// limit ranges.
	AllowCreateOnUpdate bool
	// NoDeleteCollection refuses DELETE on the collection (405), as
	// upstream does for namespaces: one request must not end them all.
	NoDeleteCollection bool
	// Allocator, when set, claims what objects hold beyond their own key;
	// the handler settles each claim with the write it belongs to.
	Allocator Allocator
	// ExtraSubresources are served by dedicated handlers (pods/binding,
	// pods/log, pods/eviction); they are listed here for discovery.
	ExtraSubresources []Subresource
}

// Subresource is a discovery entry for a subresource served by its own handler.
type Subresource struct {
	Name  string
	Kind  string
	Group string
	// Version is the kind's version when Group is not the parent's.
	Version string
	Verbs   []string
}

// GroupVersionResource returns the resource's GVR.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Name)
}

// GroupVersionKind returns the resource's GVK.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// ObjectAttrs returns labels and fields, metadata.name and metadata.namespace
// included, for selectors.
func (r *Resource) ObjectAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := metaAccessor(obj)
	if err != nil {
		return nil, nil, err
	}
	fs := fields.Set{"metadata.name": m.GetName()}
	if r.Namespaced {
		fs["metadata.namespace"] = m.GetNamespace()
	}
	ls := labels.Set(m.GetLabels())
	if r.Attrs != nil {
		_, extra, err := r.Attrs(obj)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range extra {
			fs[k] = v
		}
	}
	return ls, fs, nil
}
