package job

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Job tracking with finalizers, as upstream does since 1.26: every pod the
// controller creates (or adopts) carries batch.kubernetes.io/job-tracking,
// so that a finished pod cannot vanish before it is counted. A finished pod
// is counted in three steps, each a write: its UID goes into
// status.uncountedTerminatedPods (an Indexed Job's success goes straight
// into completedIndexes), then its finalizer is removed, then the UID moves
// from the list into status.succeeded or status.failed. A crash between any
// two steps neither loses the pod nor counts it twice.

// maxUncountedPods caps the pods one sync counts, as upstream's 500 does,
// keeping the UID lists in status small; the rest wait for the next sync.
const maxUncountedPods = 500

// orphanQueueName is upstream's name for the queue of pods whose finalizer
// is to go because no unfinished Job counts them any more.
const orphanQueueName = "job_orphan_pod"

func hasTracking(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// removeTrackingPatch drops only batchv1.JobTrackingFinalizer, whatever
// other finalizers the pod has.
const removeTrackingPatch = `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`

// removeTracking removes the tracking finalizer from p; a pod already gone
// (gone) was released all the same.
func (c *Controller) removeTracking(ctx context.Context, p *corev1.Pod) (gone bool, err error) {
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(removeTrackingPatch), metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("remove tracking finalizer of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return false, nil
}

// stoppedWhileDeleted says whether p, deleted and not reported finished,
// had its deletion made final (grace period 0: the kubelet's last delete
// once it stopped the pod, or a forced delete) and is held only by
// finalizers. The kubelet reports a pod it stopped Failed or Succeeded
// before its last delete, but a forced delete, or one whose node is gone,
// gets no such report: without this a deleted pod of a Job that replaces
// only failed pods would be waited on for ever.
func stoppedWhileDeleted(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && ptr.Deref(p.DeletionGracePeriodSeconds, -1) == 0 &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// finalizerRemovals remembers, per Job, the pods whose finalizer this
// controller removed but the pod cache does not yet show without it: such
// a pod was counted already and must not be counted again.
type finalizerRemovals struct {
	mu      sync.Mutex
	pending map[string]sets.Set[types.UID]
}

func newFinalizerRemovals() *finalizerRemovals {
	return &finalizerRemovals{pending: map[string]sets.Set[types.UID]{}}
}

func (r *finalizerRemovals) expect(key string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[key] == nil {
		r.pending[key] = sets.New[types.UID]()
	}
	r.pending[key].Insert(uid)
}

func (r *finalizerRemovals) observed(key string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.pending[key]; s != nil {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(r.pending, key)
		}
	}
}

// expected is a copy of key's pending removals.
func (r *finalizerRemovals) expected(key string) sets.Set[types.UID] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[key].Clone()
}

func (r *finalizerRemovals) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, key)
}

// releasePods removes the tracking finalizer from pods, all at once; ok[i]
// says whether pods[i] no longer has it.
func (c *Controller) releasePods(ctx context.Context, key string, pods []*corev1.Pod) (ok []bool, err error) {
	ok = make([]bool, len(pods))
	_, err = controllerutil.Parallel(len(pods), func(i int) error {
		c.removals.expect(key, pods[i].UID)
		gone, err := c.removeTracking(ctx, pods[i])
		if gone || err != nil {
			// No event will show this removal.
			c.removals.observed(key, pods[i].UID)
		}
		if err != nil {
			return err
		}
		ok[i] = true
		return nil
	})
	return ok, err
}

// moveUncounted moves the UIDs in status.uncountedTerminatedPods of pods no
// longer holding the finalizer (or gone) into the counters.
func moveUncounted(st *batchv1.JobStatus, withFinalizer sets.Set[types.UID]) {
	unc := st.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, u := range uids {
			if withFinalizer.Has(u) {
				out = append(out, u)
			}
		}
		return out
	}
	succ, fail := keep(unc.Succeeded), keep(unc.Failed)
	st.Succeeded += int32(len(unc.Succeeded) - len(succ))
	st.Failed += int32(len(unc.Failed) - len(fail))
	unc.Succeeded, unc.Failed = succ, fail
}

// podsWaitingForReplacement are, with backoffLimitPerIndex, the failed
// pods whose finalizer stays for now, as upstream keeps it: the last
// failure of an index that is neither failed nor running again, whose
// failure counts its next pod is still to inherit. Without the finalizer a
// deleted pod would take the index's failure count with it.
func podsWaitingForReplacement(job *batchv1.Job, pods []*corev1.Pod, failedIdx map[int]bool, running sets.Set[int]) sets.Set[types.UID] {
	completions := int(*job.Spec.Completions)
	last := map[int]*corev1.Pod{}
	for _, p := range pods {
		i := podIndex(p, completions)
		if i < 0 || !hasTracking(p) || !isPodFailed(p, job) || failedIdx[i] || running.Has(i) {
			continue
		}
		if prev, ok := last[i]; !ok || absoluteFailures(p) > absoluteFailures(prev) {
			last[i] = p
		}
	}
	out := sets.New[types.UID]()
	for _, p := range last {
		out.Insert(p.UID)
	}
	return out
}

// releaseFinished removes the finalizer from the pods of a finished Job
// still holding it (one created late, or left by a crash): nothing counts
// them any more.
func (c *Controller) releaseFinished(ctx context.Context, job *batchv1.Job) error {
	pods, err := c.trackedPodsOf(job.Namespace, func(ref *metav1.OwnerReference) bool { return ref.UID == job.UID })
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods {
		if _, err := c.removeTracking(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("release pods of finished job %s/%s: %v", job.Namespace, job.Name, errs)
	}
	return nil
}

// enqueueOrphans queues the pods still naming the deleted Job ns/name as
// their controller and holding the finalizer.
func (c *Controller) enqueueOrphans(ns, name string) {
	pods, _ := c.trackedPodsOf(ns, func(ref *metav1.OwnerReference) bool { return isJobRef(ref) && ref.Name == name })
	for _, p := range pods {
		if key, ok := controllerutil.KeyFunc(p); ok {
			c.orphans.Add(key)
		}
	}
}

// trackedPodsOf are the cached pods of ns holding the tracking finalizer
// whose controller reference controlledBy accepts.
func (c *Controller) trackedPodsOf(ns string, controlledBy func(ref *metav1.OwnerReference) bool) ([]*corev1.Pod, error) {
	pods, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := controllerutil.ControllerRef(p); ref != nil && controlledBy(ref) && hasTracking(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func isJobRef(ref *metav1.OwnerReference) bool {
	return ref.Kind == controllerKind.Kind && ref.APIVersion == controllerKind.GroupVersion().String()
}

// syncOrphanPod removes the finalizer from a pod no unfinished Job counts:
// its Job is gone (deleted, or replaced by another of the same name), or it
// has no controller at all. A pod controlled by something other than a Job
// is left alone, as upstream leaves it.
func (c *Controller) syncOrphanPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasTracking(pod) {
		return nil
	}
	if ref := controllerutil.ControllerRef(pod); ref != nil {
		if !isJobRef(ref) {
			return nil
		}
		// Ask the apiserver: a cache that has not seen the Job yet must
		// not cost a live pod its finalizer.
		job, err := c.client.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil && job.UID == ref.UID && !finished(job):
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("get job of orphan pod %s: %w", key, err)
		}
	}
	_, err = c.removeTracking(ctx, pod)
	return err
}

// statusWrites remembers, per Job, the resourceVersion of the controller's
// last status write, to tell a cached Job older than it. kube-lite's
// resourceVersions are etcd revisions, so they order; one that does not
// parse is never called stale.
type statusWrites struct {
	mu sync.Mutex
	rv map[string]uint64
}

func (w *statusWrites) wrote(key, rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rv[key] = max(w.rv[key], n)
}

func (w *statusWrites) stale(key, rv string) bool {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return n < w.rv[key]
}

func (w *statusWrites) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}
