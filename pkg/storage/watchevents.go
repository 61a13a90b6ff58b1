package storage

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
