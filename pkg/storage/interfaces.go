// Package storage defines what the apiserver needs from a key-value store:
// objects addressed by key, versioned by the store's revision, watchable in order.
package storage

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Interface is a versioned object store. Every object returned carries its
// resourceVersion (the store revision that last modified it); a list carries the
// revision it was read at.
type Interface interface {
	// Create stores obj under key if nothing is there yet (ErrKeyExists otherwise)
	// and decodes the stored object into out.
	Create(ctx context.Context, key string, obj, out runtime.Object) error

	// Get decodes the object under key into out (ErrKeyNotFound if absent).
	Get(ctx context.Context, key string, out runtime.Object) error

	// List decodes every object under the prefix that matches opts.Predicate into
	// listOut (a pointer to a *List type), honouring limit/continue.
	List(ctx context.Context, prefix string, opts ListOptions, listOut runtime.Object) error

	// Watch streams changes under key (a prefix when opts.Recursive) after
	// opts.ResourceVersion, in revision order. An empty or "0" resourceVersion
	// first sends the current objects as ADDED events.
	Watch(ctx context.Context, key string, opts ListOptions) (watch.Interface, error)

	// GuaranteedUpdate reads the object under key, calls tryUpdate with it and
	// writes the result if nothing changed in between, retrying otherwise.
	// tryUpdate returning an error aborts the update with that error. With
	// ignoreNotFound, tryUpdate is called with an empty object (from out) when
	// the key is absent, and the result is created.
	GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool,
		preconditions *Preconditions, tryUpdate UpdateFunc) error

	// Delete removes the object under key and decodes its last state into out.
	// validate runs against the current object before the delete is attempted
	// and is retried with it on conflicts.
	Delete(ctx context.Context, key string, out runtime.Object, preconditions *Preconditions,
		validate ValidateDeletionFunc) error

	// CurrentRevision reports the store's latest revision.
	CurrentRevision(ctx context.Context) (int64, error)
}

// SharedWatch is implemented by a watch whose event objects other watches
// receive too (the watch cache's): nobody may modify them, and an encoder
// may reuse the bytes it made of one for the others. Objects of any other
// watch are its own, sent once.
type SharedWatch interface {
	watch.Interface
	SharesObjects()
}

// UpdateFunc computes the new object from the current one. Returning a nil
// object with a nil error leaves the stored object untouched.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// ValidateDeletionFunc may veto the deletion of the current object.
type ValidateDeletionFunc func(ctx context.Context, current runtime.Object) error

// Preconditions must hold for a write to go ahead.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// Check reports a conflict error naming key when obj does not meet p.
func (p *Preconditions) Check(key string, obj runtime.Object) error {
	if p == nil {
		return nil
	}
	m, err := metaOf(obj)
	if err != nil {
		return err
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		return NewPreconditionError(key, "UID", string(*p.UID), string(m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return NewPreconditionError(key, "ResourceVersion", *p.ResourceVersion, m.GetResourceVersion())
	}
	return nil
}

// ListOptions selects and pages what List and Watch return.
type ListOptions struct {
	// ResourceVersion: "" reads the latest state; "0" any state (we read the
	// latest); N a state at least as new as N, or exactly N with Exact.
	ResourceVersion string
	Exact           bool
	// Limit and Continue page a List; a continue token is opaque to callers.
	Limit    int64
	Continue string
	// Predicate filters objects (and, for Watch, turns updates that move an
	// object in or out of the selection into ADDED/DELETED).
	Predicate SelectionPredicate
	// Recursive treats key as a prefix (Watch).
	Recursive bool
	// AllowWatchBookmarks asks Watch to send BOOKMARK events carrying only
	// a resourceVersion.
	AllowWatchBookmarks bool
	// InitialEventsEndBookmark asks a Watch from "" or "0" to follow the
	// initial ADDED events with a BOOKMARK at the revision they were read
	// at, annotated k8s.io/initial-events-end=true: what clients asking for
	// sendInitialEvents wait for before they consider their cache synced.
	InitialEventsEndBookmark bool
	// Encoded asks a Watch for *Encoded objects in place of decoded ones,
	// and a deletion without the object's last value: for a consumer that
	// keeps every object's last state itself and decodes only what it
	// hands on (the watch cache). It takes no predicate.
	Encoded bool
}

// AttrFunc returns the labels and selectable fields of an object.
type AttrFunc func(obj runtime.Object) (labels.Set, fields.Set, error)

// SelectionPredicate is a label and field selector over objects.
type SelectionPredicate struct {
	Label    labels.Selector
	Field    fields.Selector
	GetAttrs AttrFunc
}

// Empty reports whether the predicate matches everything.
func (p SelectionPredicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether obj is selected.
func (p SelectionPredicate) Matches(obj runtime.Object) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	ls, fs, err := p.GetAttrs(obj)
	if err != nil {
		return false, err
	}
	if p.Label != nil && !p.Label.Matches(ls) {
		return false, nil
	}
	if p.Field != nil && !p.Field.Matches(fs) {
		return false, nil
	}
	return true, nil
}
