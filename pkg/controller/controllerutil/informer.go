package controllerutil

import "k8s.io/client-go/tools/cache"

// FromDeleted returns the object of an informer delete event, which is a
// DeletedFinalStateUnknown tombstone when the watch missed the deletion;
// ok is false when obj is neither a T nor a tombstone holding one.
func FromDeleted[T any](obj any) (t T, ok bool) {
	if t, ok = obj.(T); ok {
		return t, true
	}
	tomb, ok := obj.(cache.DeletedFinalStateUnknown)
	if !ok {
		return t, false
	}
	t, ok = tomb.Obj.(T)
	return t, ok
}
