package job

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// backoffRecord is what a Job's pod failures leave for its back-off once
// the pods themselves may be gone (pod GC, a user's delete, the finalizer
// released after counting): as upstream's, the failures since the last
// success and when the last of them ended.
type backoffRecord struct {
	uid      types.UID
	failures int32
	last     time.Time
}

// backoffRecords holds each Job's record by key, in memory as upstream
// keeps it: a restarted controller starts without one.
type backoffRecords struct {
	mu sync.Mutex
	m  map[string]backoffRecord
}

func newBackoffRecords() *backoffRecords {
	return &backoffRecords{m: map[string]backoffRecord{}}
}

// next is the Job's record with the pods that finished since it was last
// stored: a success starts the count over from the failures after it.
func (r *backoffRecords) next(key string, uid types.UID, succeeded, failed []*corev1.Pod) backoffRecord {
	r.mu.Lock()
	rec, ok := r.m[key]
	r.mu.Unlock()
	if !ok || rec.uid != uid {
		// None yet, or one left by a deleted Job of the same name.
		rec = backoffRecord{uid: uid}
	}
	var lastSuccess time.Time
	if len(succeeded) > 0 {
		rec.failures, rec.last = 0, time.Time{}
		for _, p := range succeeded {
			if t := endedAt(p); t.After(lastSuccess) {
				lastSuccess = t
			}
		}
	}
	for _, p := range failed {
		t := endedAt(p)
		if len(succeeded) > 0 && !t.After(lastSuccess) {
			continue
		}
		rec.failures++
		if t.After(rec.last) {
			rec.last = t
		}
	}
	return rec
}

// store keeps rec once the status write that counts its pods is done, so
// that the next sync, which no longer sees them as new, still waits.
func (r *backoffRecords) store(key string, rec backoffRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[key] = rec
}

// forget drops the record of a Job that finished or was deleted.
func (r *backoffRecords) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

// endedAt is when a finished pod ended, as upstream estimates it: when its
// containers ended (or it stopped being ready), else, for a pod deleted
// before it could finish, when the deletion's grace period started, else
// its creation.
func endedAt(p *corev1.Pod) time.Time {
	terminal := p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
	if t := finishedAt(p); terminal && !t.IsZero() {
		return t
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	}
	return p.CreationTimestamp.Time
}
