package deployment

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations and reasons, spelled as upstream so kubectl's rollout commands
// and `kubectl describe` read them.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	lastAppliedAnnotation     = "kubectl.kubernetes.io/last-applied-configuration"
	rollbackToAnnotation      = "deprecated.deployment.rollback.to"

	reasonNewRSCreated   = "NewReplicaSetCreated"
	reasonFoundNewRS     = "FoundNewReplicaSet"
	reasonRSUpdated      = "ReplicaSetUpdated"
	reasonNewRSAvailable = "NewReplicaSetAvailable"
	reasonTimedOut       = "ProgressDeadlineExceeded"
	reasonPaused         = "DeploymentPaused"
	reasonResumed        = "DeploymentResumed"
	reasonMinAvailable   = "MinimumReplicasAvailable"
	reasonMinUnavailable = "MinimumReplicasUnavailable"
	reasonFailedCreate   = "ReplicaSetCreateError"
)

// templateHash names a template: equal templates (and collision counts)
// give equal hashes, so a restarted controller finds its ReplicaSets again.
func templateHash(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	b, _ := json.Marshal(t) // a PodTemplateSpec always encodes
	_, _ = h.Write(b)
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.Itoa(int(*collisionCount))))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// sameTemplate compares a ReplicaSet's template with the Deployment's,
// ignoring the pod-template-hash label the controller added.
func sameTemplate(rsTemplate, dTemplate *corev1.PodTemplateSpec) bool {
	a, b := rsTemplate.DeepCopy(), dTemplate.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

func revision(rs *appsv1.ReplicaSet) int64 {
	v, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revision(rs))
	}
	return m
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

func specSum(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += rsReplicas(rs)
	}
	return n
}

func statusSum(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(&rs.Status)
		}
	}
	return n
}

// terminatingSum is the pods of rss being deleted, or nil when a ReplicaSet
// its controller has already synced does not say: a partial sum would
// understate them. One not yet synced has no pods to count.
func terminatingSum(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs.Status.TerminatingReplicas != nil:
			n += *rs.Status.TerminatingReplicas
		case rs.Status.ObservedGeneration != 0:
			return nil
		}
	}
	return &n
}

// availableSum counts available pods but never more than a ReplicaSet is
// scaled to: right after a scale-down its status still counts the pods
// being deleted, and trusting that would let a rollout scale down twice.
func availableSum(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += min(rs.Status.AvailableReplicas, rsReplicas(rs))
		}
	}
	return n
}

// surgeAndUnavailable resolves maxSurge and maxUnavailable for d as upstream
// does: surge rounds up, unavailable down, and both 0 means unavailable 1.
func surgeAndUnavailable(d *appsv1.Deployment) (int32, int32) {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0, 0
	}
	want := int(replicas(d))
	quarter := intstr.FromString("25%")
	surgeV, unavailV := &quarter, &quarter
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surgeV = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailV = ru.MaxUnavailable
		}
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(surgeV, want, true)
	if err != nil {
		surge = 0
	}
	unavail, err := intstr.GetScaledValueFromIntOrPercent(unavailV, want, false)
	if err != nil {
		unavail = 0
	}
	if surge == 0 && unavail == 0 {
		unavail = 1
	}
	if unavail > want {
		unavail = want
	}
	return int32(surge), int32(unavail)
}

func maxUnavailable(d *appsv1.Deployment) int32 {
	_, u := surgeAndUnavailable(d)
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0
	}
	return u
}

func getCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

// setCondition replaces the condition of c's type unless it already says
// the same (status and reason), keeping the transition time when only the
// reason changes.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != int32(^uint32(0)>>1)
}

// complete is upstream's DeploymentComplete: every replica updated and available.
func complete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	r := replicas(d)
	return st.UpdatedReplicas == r && st.Replicas == r && st.AvailableReplicas == r && st.ObservedGeneration >= d.Generation
}

// progressing is upstream's DeploymentProgressing: the new status is a step
// closer to done than the recorded one.
func progressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	oldOld := old.Replicas - old.UpdatedReplicas
	newOld := st.Replicas - st.UpdatedReplicas
	return st.UpdatedReplicas > old.UpdatedReplicas || newOld < oldOld ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

func timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(st, appsv1.DeploymentProgressing)
	if c == nil {
		return false
	}
	if c.Reason == reasonNewRSAvailable {
		return false
	}
	if c.Reason == reasonTimedOut {
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

func byCreation(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		a, b := rss[i], rss[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// copyAnnotations copies the Deployment's own annotations onto its
// ReplicaSet (not the controller's bookkeeping ones); true if any changed.
func copyAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		switch k {
		case lastAppliedAnnotation, RevisionAnnotation, revisionHistoryAnnotation, DesiredReplicasAnnotation, MaxReplicasAnnotation, rollbackToAnnotation:
			continue
		}
		if cur, ok := rs.Annotations[k]; !ok || cur != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// setReplicasAnnotations records the Deployment size a ReplicaSet was scaled
// for, which is how a later scale of the Deployment is recognised.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxTotal int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxTotal))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

// revisionHistoryLimit bounds the revision-history annotation, in
// characters, as upstream does.
const revisionHistoryLimit = 2000

// recordRevisionHistory appends old to rs's revision-history annotation,
// dropping its oldest entries to stay within revisionHistoryLimit.
func recordRevisionHistory(rs *appsv1.ReplicaSet, old string) {
	cur := rs.Annotations[revisionHistoryAnnotation]
	if cur == "" {
		rs.Annotations[revisionHistoryAnnotation] = old
		return
	}
	revs := strings.Split(cur, ",")
	total := len(cur) + len(old) + 1
	start := 0
	for total > revisionHistoryLimit && start < len(revs) {
		total -= len(revs[start]) + 1
		start++
	}
	if total <= revisionHistoryLimit {
		rs.Annotations[revisionHistoryAnnotation] = strings.Join(append(revs[start:], old), ",")
	}
}
