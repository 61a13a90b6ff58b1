package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Preemption follows upstream's DefaultPreemption PostFilter: victims whose
// PodDisruptionBudget has no disruption left are spared first, and nodes
// where fewer budgets are broken win. Every node is tried (upstream samples
// large clusters), synchronously.

// Messages as upstream words them; a failed preemption adds them to the
// FailedScheduling message after "preemption: ".
const (
	msgPreemptNever         = "not eligible due to preemptionPolicy=Never."
	msgTerminatingVictim    = "not eligible due to a terminating pod on the nominated node."
	reasonNoVictims         = "No preemption victims found for incoming pod."
	reasonPreemptNotHelpful = "Preemption is not helpful for scheduling"
)

// simulator runs the cycle's filters on a copy of a node and keeps a copy
// of the PreFilter state in step with the pods added to it or removed from
// it (the framework).
type simulator interface {
	RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status
	RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, pod, add *framework.PodInfo, node *framework.NodeInfo) *framework.Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, pod, remove *framework.PodInfo, node *framework.NodeInfo) *framework.Status
}

// candidate is a node where evicting victims lets the pod fit;
// pdbViolations of them go against a PodDisruptionBudget.
type candidate struct {
	node          string
	victims       []*v1.Pod
	pdbViolations int
}

// eligibleToPreempt reports whether pod may preempt, and why not: pods
// that never preempt, and pods whose earlier victims on their nominated
// node are still terminating (preempting again would take more than
// needed) unless that node can no longer take the pod at all
// (nominatedStatus, why the filters rejected it, is then
// UnschedulableAndUnresolvable), as upstream.
func eligibleToPreempt(pod *v1.Pod, nominated *framework.NodeInfo, nominatedStatus *framework.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, msgPreemptNever
	}
	if pod.Status.NominatedNodeName == "" || nominated == nil || nominatedStatus.Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	prio := corev1helpers.PodPriority(pod)
	for _, p := range nominated.Pods {
		if corev1helpers.PodPriority(p.Pod) < prio && terminatingByPreemption(p.Pod) {
			return false, msgTerminatingVictim
		}
	}
	return true, ""
}

func terminatingByPreemption(pod *v1.Pod) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// selectVictims finds the fewest, least important pods on node whose
// removal lets pi fit: it removes every lower-priority pod, checks the pod
// fits, then gives back, most important first, each pod the pod can live
// with; pods that the budgets in pdbs protect are given back before the
// others, and those that must go all the same are counted in violations.
// nominated are the pods nominated to node that pi must leave room for. A
// nil status means victims were found.
func selectVictims(ctx context.Context, sim simulator, state *framework.CycleState, pi *framework.PodInfo, node *framework.NodeInfo,
	nominated []*framework.PodInfo, pdbs []budget, now time.Time) (victims []*v1.Pod, violations int, _ *framework.Status) {
	prio := corev1helpers.PodPriority(pi.Pod)
	var lower []*framework.PodInfo
	for _, p := range node.Pods {
		if corev1helpers.PodPriority(p.Pod) < prio {
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonNoVictims)
	}
	n, st, s := withNominated(ctx, sim, state, pi, node, nominated)
	if !s.IsSuccess() {
		return nil, 0, s
	}
	add := func(p *framework.PodInfo) *framework.Status {
		n.AddPod(p)
		return sim.RunPreFilterExtensionAddPod(ctx, st, pi, p, n)
	}
	remove := func(p *framework.PodInfo) *framework.Status {
		n.RemovePod(p.Pod)
		return sim.RunPreFilterExtensionRemovePod(ctx, st, pi, p, n)
	}
	for _, p := range lower {
		if s := remove(p); !s.IsSuccess() {
			return nil, 0, s
		}
	}
	if s := sim.RunFilterPlugins(ctx, st, pi, n); !s.IsSuccess() {
		return nil, 0, s
	}
	sort.SliceStable(lower, func(i, j int) bool { return moreImportant(lower[i].Pod, lower[j].Pod, now) })
	protected, unprotected := splitByBudget(lower, pdbs)
	// reprieve gives p back if pi still fits; it reports whether p must go.
	reprieve := func(p *framework.PodInfo) (bool, *framework.Status) {
		if s := add(p); !s.IsSuccess() {
			return false, s
		}
		if s := sim.RunFilterPlugins(ctx, st, pi, n); s.IsSuccess() {
			return false, nil
		}
		if s := remove(p); !s.IsSuccess() {
			return false, s
		}
		victims = append(victims, p.Pod)
		return true, nil
	}
	for _, p := range protected {
		gone, s := reprieve(p)
		if s != nil {
			return nil, 0, s
		}
		if gone {
			violations++
		}
	}
	for _, p := range unprotected {
		if _, s := reprieve(p); s != nil {
			return nil, 0, s
		}
	}
	if len(protected) > 0 && len(unprotected) > 0 {
		sort.SliceStable(victims, func(i, j int) bool { return moreImportant(victims[i], victims[j], now) })
	}
	return victims, violations, nil
}

// budget is a PodDisruptionBudget as preemption weighs it, its selector
// parsed once per preemption instead of once per pod on every node tried.
type budget struct {
	namespace string
	selector  labels.Selector
	allowed   int32
	disrupted map[string]metav1.Time
}

// budgetsFrom keeps the budgets that can protect a pod: one whose selector
// is empty or does not parse protects nothing here.
func budgetsFrom(pdbs []*policyv1.PodDisruptionBudget) []budget {
	out := make([]budget, 0, len(pdbs))
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		out = append(out, budget{namespace: pdb.Namespace, selector: sel, allowed: pdb.Status.DisruptionsAllowed, disrupted: pdb.Status.DisruptedPods})
	}
	return out
}

// splitByBudget separates the pods (most important first) that evicting
// all of them would take past a budget's disruptionsAllowed from the rest,
// as upstream: a pod the apiserver already counted (in disruptedPods) takes
// nothing more.
func splitByBudget(pods []*framework.PodInfo, pdbs []budget) (protected, unprotected []*framework.PodInfo) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.allowed
	}
	for _, p := range pods {
		violates := false
		for i, pdb := range pdbs {
			if pdb.namespace != p.Pod.Namespace || len(p.Pod.Labels) == 0 || !pdb.selector.Matches(labels.Set(p.Pod.Labels)) {
				continue
			}
			if _, counted := pdb.disrupted[p.Pod.Name]; counted {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				violates = true
			}
		}
		if violates {
			protected = append(protected, p)
		} else {
			unprotected = append(unprotected, p)
		}
	}
	return protected, unprotected
}

// withNominated copies node and state for a simulation on node, with the
// pods nominated there that pi must leave room for added to both.
func withNominated(ctx context.Context, sim simulator, state *framework.CycleState, pi *framework.PodInfo, node *framework.NodeInfo,
	nominated []*framework.PodInfo) (*framework.NodeInfo, *framework.CycleState, *framework.Status) {
	n, st := node.Snapshot(), state.Clone()
	for _, p := range nominated {
		n.AddPod(p)
		if s := sim.RunPreFilterExtensionAddPod(ctx, st, pi, p, n); !s.IsSuccess() {
			return nil, nil, s
		}
	}
	return n, st, nil
}

// moreImportant ranks pods as upstream: higher priority first, then the
// one running longer.
func moreImportant(a, b *v1.Pod, now time.Time) bool {
	pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return startTime(a, now).Before(startTime(b, now))
}

func startTime(p *v1.Pod, now time.Time) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return now
}

// pickCandidate chooses among candidates as upstream ranks them: the fewest
// budgets broken, then the lowest highest victim priority, then the lowest sum of victim priorities, then
// the fewest victims, then the node whose most important victims started
// last (disrupting the newest work), then the first.
func pickCandidate(cands []candidate, now time.Time) candidate {
	best := cands[0]
	for _, c := range cands[1:] {
		if betterCandidate(c, best, now) {
			best = c
		}
	}
	return best
}

func betterCandidate(a, b candidate, now time.Time) bool {
	if a.pdbViolations != b.pdbViolations {
		return a.pdbViolations < b.pdbViolations
	}
	if ha, hb := highestPriority(a.victims), highestPriority(b.victims); ha != hb {
		return ha < hb
	}
	if sa, sb := prioritySum(a.victims), prioritySum(b.victims); sa != sb {
		return sa < sb
	}
	if len(a.victims) != len(b.victims) {
		return len(a.victims) < len(b.victims)
	}
	return earliestStart(a.victims, now).After(earliestStart(b.victims, now))
}

func highestPriority(pods []*v1.Pod) int32 {
	h := int32(math.MinInt32)
	for _, p := range pods {
		h = max(h, corev1helpers.PodPriority(p))
	}
	return h
}

// prioritySum shifts priorities to be positive, as upstream, so that a
// negative-priority victim does not make a node look cheaper than none.
func prioritySum(pods []*v1.Pod) int64 {
	var s int64
	for _, p := range pods {
		s += int64(corev1helpers.PodPriority(p)) + math.MaxInt32 + 1
	}
	return s
}

// earliestStart is the earliest start among the highest-priority victims.
func earliestStart(pods []*v1.Pod, now time.Time) time.Time {
	h := highestPriority(pods)
	var t time.Time
	for _, p := range pods {
		if corev1helpers.PodPriority(p) != h {
			continue
		}
		if st := startTime(p, now); t.IsZero() || st.Before(t) {
			t = st
		}
	}
	return t
}

// findCandidates tries every node the filters rejected in a way that
// removing pods may fix. statuses are the filter rejections, by node index.
func findCandidates(ctx context.Context, sim simulator, state *framework.CycleState, pi *framework.PodInfo, nodes []*framework.NodeInfo,
	statuses []*framework.Status, nominated map[string][]*framework.PodInfo, pdbs []budget, now time.Time) ([]candidate, map[string]int) {
	var cands []candidate
	reasons := map[string]int{}
	for i, n := range nodes {
		if i < len(statuses) && statuses[i] != nil && statuses[i].Code() == framework.UnschedulableAndUnresolvable {
			reasons[reasonPreemptNotHelpful]++
			continue
		}
		victims, violations, st := selectVictims(ctx, sim, state, pi, n, nominated[n.Node().Name], pdbs, now)
		if st != nil {
			for _, r := range st.Reasons() {
				reasons[r]++
			}
			continue
		}
		cands = append(cands, candidate{node: n.Node().Name, victims: victims, pdbViolations: violations})
	}
	return cands, reasons
}

// preempt runs when no node fits pi: it evicts the victims on the best
// candidate node and returns that node, to be recorded as the pod's
// nominatedNodeName. Otherwise it returns why, for the FailedScheduling
// message, and, when no node could be made to fit, "" to clear a
// nomination the pod holds (as upstream; nil leaves it).
func (s *Scheduler) preempt(ctx context.Context, state *framework.CycleState, pi *framework.PodInfo, nodes []*framework.NodeInfo, statuses []*framework.Status) (*string, string) {
	s.metrics.preemptionAttempts.Inc()
	pod := pi.Pod
	nominated, _ := s.snapshot.Get(pod.Status.NominatedNodeName)
	var nominatedStatus *framework.Status
	// Only a nomination still in the snapshot asks why its node was rejected.
	if nominated != nil {
		isNominated := func(n *framework.NodeInfo) bool { return n.Node().Name == pod.Status.NominatedNodeName }
		if i := slices.IndexFunc(nodes, isNominated); i >= 0 && i < len(statuses) {
			nominatedStatus = statuses[i]
		}
	}
	if ok, msg := eligibleToPreempt(pod, nominated, nominatedStatus); !ok {
		return nil, "preemption: " + msg
	}
	now := s.clock.Now()
	pdbs, err := s.pdbs.List(labels.Everything())
	if err != nil {
		return nil, "preemption: " + err.Error()
	}
	cands, reasons := findCandidates(ctx, s.fwk, state, pi, nodes, statuses, s.nominated, budgetsFrom(pdbs), now)
	if len(cands) == 0 {
		var drop *string
		if pod.Status.NominatedNodeName != "" {
			drop = new(string)
		}
		return drop, "preemption: " + fitErrorMessage(len(nodes), reasons)
	}
	c := pickCandidate(cands, now)
	s.metrics.preemptionVictims.Observe(float64(len(c.victims)))
	for _, victim := range c.victims {
		if victim.DeletionTimestamp != nil {
			continue // already going
		}
		if err := s.evict(ctx, pod, victim, c.node); err != nil {
			slog.Warn("preempting pod", "preemptor", pod.Namespace+"/"+pod.Name, "victim", victim.Namespace+"/"+victim.Name, "err", err)
			return nil, "preemption: " + err.Error()
		}
	}
	// Lower-priority pods nominated there may no longer fit: as upstream,
	// drop their nominations so that they look elsewhere.
	for _, p := range s.nominator.dropLowerOn(c.node, corev1helpers.PodPriority(pod)) {
		// null removes the field in a merge patch.
		err := s.patchStatus(ctx, p, map[string]any{"nominatedNodeName": nil})
		if err != nil && !apierrors.IsNotFound(err) {
			slog.Warn("clearing a lower-priority nomination", "pod", p.Namespace+"/"+p.Name, "node", c.node, "err", err)
		}
	}
	return &c.node, ""
}

// evict marks victim as disrupted by preemption and deletes it gracefully,
// as upstream, so that its controller and its users can tell why it went.
func (s *Scheduler) evict(ctx context.Context, preemptor, victim *v1.Pod, node string) error {
	schedulerName := preemptor.Spec.SchedulerName
	if schedulerName == "" {
		schedulerName = s.name
	}
	cond := v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler,
		Message:            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", schedulerName),
		LastTransitionTime: metav1.NewTime(s.clock.Now().Truncate(time.Second)),
	}
	if err := s.patchStatus(ctx, victim, map[string]any{"conditions": []v1.PodCondition{cond}}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("add the DisruptionTarget condition to %s/%s: %w", victim.Namespace, victim.Name, err)
	}
	// The UID precondition keeps a new pod of the same name safe.
	err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s/%s: %w", victim.Namespace, victim.Name, err)
	}
	s.recorder.Eventf(victim, v1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", preemptor.UID, node)
	return nil
}
