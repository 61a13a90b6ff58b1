package drain

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectl's words for each reason a pod stops or slows a drain.
const (
	daemonSetFatal      = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
	daemonSetWarning    = "ignoring DaemonSet-managed Pods"
	localStorageFatal   = "Pods with local storage (use --delete-emptydir-data to override)"
	localStorageWarning = "deleting Pods with local storage"
	unmanagedFatal      = "Pods that declare no controller (use --force to override)"
	unmanagedWarning    = "deleting Pods that declare no controller"
)

// verdict is what drain does with one pod.
type verdict int

const (
	okay verdict = iota
	skip
	warn
	refuse
)

// podStatus is one filter's answer: whether the pod is removed, and why not
// or with what warning.
type podStatus struct {
	remove  bool
	verdict verdict
	message string
}

func statusOkay() podStatus { return podStatus{remove: true, verdict: okay} }
func statusSkip() podStatus { return podStatus{verdict: skip} }
func statusWarn(remove bool, m string) podStatus {
	return podStatus{remove: remove, verdict: warn, message: m}
}
func statusRefuse(m string) podStatus { return podStatus{verdict: refuse, message: m} }

// filterOptions are the drain flags the filters read.
type filterOptions struct {
	force, ignoreDaemonSets, deleteEmptyDirData bool
	skipWaitForDeleteTimeoutSeconds             int
	// daemonSet fetches a pod's DaemonSet; its error (NotFound or other)
	// decides whether the pod's owner is gone.
	daemonSet func(ctx context.Context, namespace, name string) error
	now       func() time.Time
}

// podDecision pairs a pod with the verdict of the filters.
type podDecision struct {
	pod    corev1.Pod
	status podStatus
}

// decide runs the filters in kubectl's order. A filter that keeps the pod
// ends the chain; otherwise the last filter's answer stands, so an earlier
// warning on a pod that is removed anyway is dropped, as kubectl drops it.
func (o filterOptions) decide(ctx context.Context, pods []corev1.Pod) []podDecision {
	filters := []func(context.Context, *corev1.Pod) podStatus{
		o.skipDeleted, o.daemonSetFilter, mirrorPodFilter, o.localStorageFilter, o.unreplicatedFilter,
	}
	out := make([]podDecision, 0, len(pods))
	for i := range pods {
		var st podStatus
		for _, f := range filters {
			st = f(ctx, &pods[i])
			if !st.remove {
				break
			}
		}
		out = append(out, podDecision{pod: pods[i], status: st})
	}
	return out
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// deletedLongAgo tells whether a terminating pod is past
// --skip-wait-for-delete-timeout and so neither removed nor waited for.
func deletedLongAgo(p *corev1.Pod, seconds int, now time.Time) bool {
	return seconds > 0 && p.DeletionTimestamp != nil &&
		int(now.Sub(p.DeletionTimestamp.Time).Seconds()) > seconds
}

func (o filterOptions) skipDeleted(_ context.Context, p *corev1.Pod) podStatus {
	if deletedLongAgo(p, o.skipWaitForDeleteTimeoutSeconds, o.now()) {
		return statusSkip()
	}
	return statusOkay()
}

func (o filterOptions) daemonSetFilter(ctx context.Context, p *corev1.Pod) podStatus {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != appsv1.SchemeGroupVersion.String() || finished(p) {
		return statusOkay()
	}
	if err := o.daemonSet(ctx, p.Namespace, ref.Name); err != nil {
		// An orphan of a deleted DaemonSet is just an unmanaged pod,
		// which --force removes.
		if apierrors.IsNotFound(err) && o.force {
			return statusWarn(true, err.Error())
		}
		return statusRefuse(err.Error())
	}
	if !o.ignoreDaemonSets {
		return statusRefuse(daemonSetFatal)
	}
	// The DaemonSet controller ignores unschedulable and would recreate
	// the pod at once, so it is left running.
	return statusWarn(false, daemonSetWarning)
}

func mirrorPodFilter(_ context.Context, p *corev1.Pod) podStatus {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return statusSkip()
	}
	return statusOkay()
}

func (o filterOptions) localStorageFilter(_ context.Context, p *corev1.Pod) podStatus {
	emptyDir := false
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			emptyDir = true
			break
		}
	}
	if !emptyDir || finished(p) {
		return statusOkay()
	}
	if !o.deleteEmptyDirData {
		return statusRefuse(localStorageFatal)
	}
	return statusWarn(true, localStorageWarning)
}

func (o filterOptions) unreplicatedFilter(_ context.Context, p *corev1.Pod) podStatus {
	if finished(p) || metav1.GetControllerOf(p) != nil {
		return statusOkay()
	}
	if o.force {
		return statusWarn(true, unmanagedWarning)
	}
	return statusRefuse(unmanagedFatal)
}

// toRemove lists the pods drain evicts or deletes.
func toRemove(ds []podDecision) []corev1.Pod {
	var out []corev1.Pod
	for _, d := range ds {
		if d.status.remove {
			out = append(out, d.pod)
		}
	}
	return out
}

// groupByMessage maps each message of the verdict v to its pods' ns/name,
// messages sorted so the output is stable.
func groupByMessage(ds []podDecision, v verdict) (msgs []string, pods map[string][]string) {
	pods = map[string][]string{}
	for _, d := range ds {
		if d.status.verdict != v {
			continue
		}
		m := d.status.message
		if m == "" {
			m = "unexpected error"
		}
		if _, ok := pods[m]; !ok {
			msgs = append(msgs, m)
		}
		pods[m] = append(pods[m], d.pod.Namespace+"/"+d.pod.Name)
	}
	sort.Strings(msgs)
	return msgs, pods
}

// warnings is the one line kubectl prints after "Warning: ".
func warnings(ds []podDecision) string {
	msgs, pods := groupByMessage(ds, warn)
	parts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		parts = append(parts, m+": "+strings.Join(pods[m], ", "))
	}
	return strings.Join(parts, "; ")
}

// refusals are the errors that stop the drain of a node before any pod
// is touched.
func refusals(ds []podDecision) []error {
	msgs, pods := groupByMessage(ds, refuse)
	errs := make([]error, 0, len(msgs))
	for _, m := range msgs {
		errs = append(errs, fmt.Errorf("cannot delete %s: %s", m, strings.Join(pods[m], ", ")))
	}
	return errs
}
