package controllerutil

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodDeletions remembers, per controller key, which pods the controller
// itself deleted, so that each deletion is observed in its Expectations
// exactly once, whichever of "deletionTimestamp set" or "object gone" the
// informer shows first (a graceful delete shows both).
type PodDeletions struct {
	expectations *Expectations
	mu           sync.Mutex
	pending      map[string]map[types.UID]bool
}

// NewPodDeletions tracks deletions against e.
func NewPodDeletions(e *Expectations) *PodDeletions {
	return &PodDeletions{expectations: e, pending: map[string]map[types.UID]bool{}}
}

// Expect records that the controller is about to delete pods for key; it
// replaces what was pending for key, as the caller only deletes once the
// earlier expectations were met or expired.
func (d *PodDeletions) Expect(key string, pods []*corev1.Pod) {
	d.mu.Lock()
	m := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		m[p.UID] = true
	}
	d.pending[key] = m
	d.mu.Unlock()
	d.expectations.Expect(key, 0, len(pods))
}

// Observed counts the deletion of pod uid for key, once; a pod this
// controller did not delete (or one already counted) changes nothing.
func (d *PodDeletions) Observed(key string, uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.pending[key]; m[uid] {
		delete(m, uid)
		d.expectations.DeletionObserved(key)
	}
}

// Forget drops what is pending for key and its expectations, once the
// controller object is gone.
func (d *PodDeletions) Forget(key string) {
	d.mu.Lock()
	delete(d.pending, key)
	d.mu.Unlock()
	d.expectations.Forget(key)
}
