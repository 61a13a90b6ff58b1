package controllerutil

import (
	"cmp"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsPodActive is a pod that counts toward a controller's replicas: neither
// finished nor being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// PodReadyCondition returns the pod's Ready condition, or nil.
func PodReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports the Ready condition.
func IsPodReady(p *corev1.Pod) bool {
	c := PodReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable is ready for at least minReadySeconds at now.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	min := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(min).Before(now)
}

// AvailableIn is how long until a ready pod becomes available (0 if never
// or already), so a controller can requeue itself for that moment.
func AvailableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	c := PodReadyCondition(p)
	if minReadySeconds == 0 || c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return 0
	}
	d := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if d < 0 {
		return 0
	}
	return d
}

// ControllerRef returns the owner reference with controller=true, or nil.
func ControllerRef(obj metav1.Object) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(obj)
}

// NewControllerRef is the owner reference a controller puts on what it creates.
func NewControllerRef(owner metav1.Object, apiVersion, kind string) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion:         apiVersion,
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &t,
		BlockOwnerDeletion: &t,
	}
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 3
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

// LessUseful orders active pods as upstream's controllers pick which to
// delete (controller.ActivePods): unscheduled, pending, not ready, ready
// for less time, restarted more, newer go first, so the pods furthest
// along are kept.
func LessUseful(a, b *corev1.Pod) bool {
	return cmp.Or(compareState(a, b), compareAge(a, b)) < 0
}

// compareState puts unscheduled before scheduled, then pending, unknown
// and running, then not ready before ready.
func compareState(a, b *corev1.Pod) int {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return boolFirst(a.Spec.NodeName == "")
	}
	if ra, rb := phaseRank(a.Status.Phase), phaseRank(b.Status.Phase); ra != rb {
		return cmp.Compare(ra, rb)
	}
	if ia, ib := IsPodReady(a), IsPodReady(b); ia != ib {
		return boolFirst(!ia)
	}
	return 0
}

// compareAge, between pods of the same state, puts first those ready for
// less time, restarted more, newer.
func compareAge(a, b *corev1.Pod) int {
	if IsPodReady(a) && IsPodReady(b) {
		ta, tb := PodReadyCondition(a).LastTransitionTime, PodReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return boolFirst(tb.Before(&ta))
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return cmp.Compare(rb, ra)
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return boolFirst(b.CreationTimestamp.Before(&a.CreationTimestamp))
	}
	return cmp.Compare(b.Name, a.Name)
}

// boolFirst is -1 when a goes first, 1 otherwise.
func boolFirst(aFirst bool) int {
	if aFirst {
		return -1
	}
	return 1
}

// PodsToDelete is the n least useful of pods (LessUseful), the ones
// upstream's controllers delete first; pods itself is left as it is.
// Ranks, when given, order pods of the same state before their age does,
// as upstream's ActivePodsWithRanks.
func PodsToDelete(pods []*corev1.Pod, n int, ranks ...func(a, b *corev1.Pod) int) []*corev1.Pod {
	sorted := slices.Clone(pods)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if c := compareState(a, b); c != 0 {
			return c < 0
		}
		for _, rank := range ranks {
			if c := rank(a, b); c != 0 {
				return c < 0
			}
		}
		return compareAge(a, b) < 0
	})
	return sorted[:n]
}
