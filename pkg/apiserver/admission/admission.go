// Package admission runs the plugins that may change (mutating) and then
// check (validating) an object after authorization and before it is stored.
package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// Operation is what the request does to the object.
type Operation string

// Operations, named as in AdmissionReview.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe the request being admitted.
type Attributes struct {
	Operation   Operation
	Resource    *registry.Resource
	Subresource string
	// Kind is the object's kind when it is not the resource's, as on
	// pods/binding (a Binding); empty means the resource's kind.
	Kind      schema.GroupVersionKind
	Namespace string
	Name      string
	// Object is the new object (nil on delete); mutating plugins change it in place.
	Object runtime.Object
	// OldObject is the stored object on update and delete.
	OldObject runtime.Object
	// Options builds the request's CreateOptions, UpdateOptions or
	// DeleteOptions (nil: none). Only webhooks send them, and most writes
	// call none: they are built when asked for, not on every write.
	Options func() runtime.Object
	User    *request.User
	DryRun  bool
}

// ObjectKind is the kind of Object and OldObject.
func (a *Attributes) ObjectKind() schema.GroupVersionKind {
	if !a.Kind.Empty() {
		return a.Kind
	}
	return a.Resource.GroupVersionKind()
}

// Mutator may change the object. Returning an error refuses the request; an
// apierrors.APIStatus error keeps its code, anything else becomes 403.
type Mutator interface {
	Name() string
	Admit(ctx context.Context, a *Attributes) error
}

// Validator checks the (mutated) object; it must not change it.
type Validator interface {
	Name() string
	Validate(ctx context.Context, a *Attributes) error
}

// Chain holds the mutating plugins, then the validating ones, in order.
type Chain struct {
	Mutators   []Mutator
	Validators []Validator
}

// Mutate runs every mutator in order; the first refusal wins. The handler
// calls it before the resource's own defaulting and validation.
func (c *Chain) Mutate(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, m := range c.Mutators {
		if err := m.Admit(ctx, a); err != nil {
			return refusal(m.Name(), a, err)
		}
	}
	return nil
}

// Validate runs every validator in order, after the resource's own
// validation and just before the object is stored.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, v := range c.Validators {
		if err := v.Validate(ctx, a); err != nil {
			return refusal(v.Name(), a, err)
		}
	}
	return nil
}

// Warn gives the client of the request in ctx a warning (a Warning header,
// as upstream's admission warnings); without a request (internal callers)
// it is dropped.
func Warn(ctx context.Context, msg string) {
	if info, ok := request.InfoFrom(ctx); ok {
		info.Warn(msg)
	}
}
