// Package status sends pod statuses to the API server: only when one
// changed, newest first wins, one PATCH per change.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Manager caches the status the kubelet computed for each pod and patches
// pods/status when it differs from what was last sent.
type Manager struct {
	client kubernetes.Interface

	mu      sync.Mutex
	pods    map[types.UID]*entry
	pending chan struct{}
}

type entry struct {
	namespace, name string
	status          v1.PodStatus
	sent            *v1.PodStatus
}

// NewManager returns a manager; call Run to start sending.
func NewManager(client kubernetes.Interface) *Manager {
	return &Manager{client: client, pods: map[types.UID]*entry{}, pending: make(chan struct{}, 1)}
}

// SetPodStatus records pod's newly computed status.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	e, ok := m.pods[pod.UID]
	if !ok {
		e = &entry{namespace: pod.Namespace, name: pod.Name}
		m.pods[pod.UID] = e
	}
	e.status = *status.DeepCopy()
	// The kubelet reports which spec generation its status reflects.
	e.status.ObservedGeneration = pod.Generation
	dirty := e.sent == nil || !apiequality.Semantic.DeepEqual(*e.sent, e.status)
	m.mu.Unlock()
	if dirty {
		select {
		case m.pending <- struct{}{}:
		default:
		}
	}
}

// Status is the last status computed for uid.
func (m *Manager) Status(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// Forget drops a pod that is gone.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

// Send sends uid's status now if it changed, and returns once the API
// server has it: what must be seen before a next step (the terminal phase
// before the pod's final delete) cannot wait for Run. A pod that is gone is
// no error.
func (m *Manager) Send(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	e, ok := m.pods[uid]
	var j job
	if ok {
		j, ok = e.changed(uid)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return m.send(ctx, j)
}

// Run sends changed statuses until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.pending:
		}
		if !m.SyncOnce(ctx) {
			// The API server is failing: retry, but not in a hot loop.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// SyncOnce sends every changed status now; false if some send failed
// (those are retried on the next call).
func (m *Manager) SyncOnce(ctx context.Context) bool {
	ok := true
	var jobs []job
	m.mu.Lock()
	for uid, e := range m.pods {
		if j, changed := e.changed(uid); changed {
			jobs = append(jobs, j)
		}
	}
	m.mu.Unlock()
	for _, j := range jobs {
		if err := m.send(ctx, j); err != nil {
			slog.Warn("patch pod status", "pod", j.ns+"/"+j.nm, "err", err)
			ok = false
			select {
			case m.pending <- struct{}{}:
			default:
			}
		}
	}
	return ok
}

// job is one status to send.
type job struct {
	uid    types.UID
	ns, nm string
	status v1.PodStatus
}

// changed is e's status to send, if it differs from what was sent; m.mu held.
func (e *entry) changed(uid types.UID) (job, bool) {
	if e.sent != nil && apiequality.Semantic.DeepEqual(*e.sent, e.status) {
		return job{}, false
	}
	return job{uid, e.namespace, e.name, *e.status.DeepCopy()}, true
}

// send patches j's status and records it as sent, also when the pod is gone
// (NotFound, or Conflict: a UID mismatch), which leaves nothing to retry.
func (m *Manager) send(ctx context.Context, j job) error {
	err := m.patch(ctx, j.uid, j.ns, j.nm, j.status)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	m.mu.Lock()
	if e, ok := m.pods[j.uid]; ok {
		s := j.status
		e.sent = &s
	}
	m.mu.Unlock()
	return nil
}

func (m *Manager) patch(ctx context.Context, uid types.UID, ns, name string, status v1.PodStatus) error {
	// A merge patch replaces each list wholesale, which is what we want: the
	// kubelet owns containerStatuses and (but for PodScheduled, which it
	// copies) the conditions. The UID makes it a precondition on the same pod.
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status":   status,
	})
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	_, err = m.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch %s/%s status: %w", ns, name, err)
	}
	return nil
}
