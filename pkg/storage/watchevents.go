package storage

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// RevisionOf returns the store revision an object or bookmark carries as
// its resourceVersion, 0 when it has none.
func RevisionOf(obj runtime.Object) int64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	rev, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return rev
}

// IsInitialEventsEnd reports whether a bookmark marks the end of a watch's
// initial events (ListOptions.InitialEventsEndBookmark).
func IsInitialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// SelectionChange is what a watch of a selection sends for an update of an
// object that matched it before (oldMatch) and matches it now (curMatch):
// MODIFIED within the selection, ADDED into it, DELETED (of the old state)
// out of it, and nothing (ok false) outside it before and after.
func SelectionChange(oldMatch, curMatch bool) (typ watch.EventType, ok bool) {
	switch {
	case curMatch && oldMatch:
		return watch.Modified, true
	case curMatch:
		return watch.Added, true
	case oldMatch:
		return watch.Deleted, true
	}
	return "", false
}

// Encoded is an object as the storage holds it, what a watch with
// ListOptions.Encoded sends in place of each object (bookmarks excepted).
type Encoded struct {
	// Key is the object's key, as callers of Interface name it.
	Key string
	// Data is the stored value; nil for a deletion.
	Data []byte
	// Rev is the revision of the change.
	Rev int64
}

// GetObjectKind implements runtime.Object: an Encoded has no kind of its
// own, its Data has.
func (e *Encoded) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (e *Encoded) DeepCopyObject() runtime.Object {
	c := *e
	c.Data = append([]byte(nil), e.Data...)
	return &c
}
