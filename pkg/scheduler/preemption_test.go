package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/scheduler/cache"
	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	"github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func prio(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = &p } }

func started(ago time.Duration) func(*v1.Pod) {
	return func(pod *v1.Pod) { st := metav1.NewTime(t0.Add(-ago)); pod.Status.StartTime = &st }
}

// prefiltered builds the default profile over nodes and runs PreFilter for
// pi, as a cycle does before preemption.
func prefiltered(t *testing.T, pi *framework.PodInfo, nodes ...*framework.NodeInfo) (*framework.Framework, *framework.CycleState) {
	t.Helper()
	fwk, err := framework.New("t", DefaultPlugins(fake.NewClientset()), cache.NewSnapshotFromNodeInfos(nodes...), 1)
	if err != nil {
		t.Fatal(err)
	}
	state := framework.NewCycleState()
	if st := fwk.RunPreFilterPlugins(context.Background(), state, pi); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	return fwk, state
}

func names(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestSelectVictims(t *testing.T) {
	node := fwktest.Node("n", fwktest.Allocatable("cpu", "4"))
	tests := []struct {
		name       string
		pods       []*v1.Pod
		preemptor  *v1.Pod
		want       []string
		wantReason string
	}{
		{
			name: "only the least important pods that must go",
			pods: []*v1.Pod{
				fwktest.Pod("low-old", fwktest.Requests("cpu", "1"), prio(1), started(time.Hour)),
				fwktest.Pod("low-new", fwktest.Requests("cpu", "1"), prio(1), started(time.Minute)),
				fwktest.Pod("mid", fwktest.Requests("cpu", "1"), prio(5)),
				fwktest.Pod("high", fwktest.Requests("cpu", "1"), prio(100)),
			},
			preemptor: fwktest.Pod("p", fwktest.Requests("cpu", "2"), prio(10)),
			// mid is reprieved first (most important), then low-old (older);
			// low-new and one more must go.
			want: []string{"low-old", "low-new"},
		},
		{
			name: "a single big victim rather than several",
			pods: []*v1.Pod{
				fwktest.Pod("small", fwktest.Requests("cpu", "1"), prio(1)),
				fwktest.Pod("big", fwktest.Requests("cpu", "3"), prio(1), started(time.Minute)),
			},
			preemptor: fwktest.Pod("p", fwktest.Requests("cpu", "3"), prio(10)),
			want:      []string{"big"},
		},
		{
			name:       "equal priorities are never victims",
			pods:       []*v1.Pod{fwktest.Pod("peer", fwktest.Requests("cpu", "4"), prio(10))},
			preemptor:  fwktest.Pod("p", fwktest.Requests("cpu", "1"), prio(10)),
			wantReason: reasonNoVictims,
		},
		{
			name: "removing every lower pod is not enough",
			pods: []*v1.Pod{
				fwktest.Pod("low", fwktest.Requests("cpu", "1"), prio(1)),
				fwktest.Pod("high", fwktest.Requests("cpu", "3"), prio(100)),
			},
			preemptor:  fwktest.Pod("p", fwktest.Requests("cpu", "2"), prio(10)),
			wantReason: "Insufficient cpu",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := fwktest.NodeInfo(node, tt.pods...)
			pi := framework.NewPodInfo(tt.preemptor)
			fwk, state := prefiltered(t, pi, ni)
			victims, _, st := selectVictims(context.Background(), fwk, state, pi, ni, nil, nil, t0)
			if !checkVictims(t, victims, st, tt.wantReason, tt.want) {
				return
			}
			if len(ni.Pods) != len(tt.pods) {
				t.Errorf("the snapshot's node lost pods: %d, want %d", len(ni.Pods), len(tt.pods))
			}
		})
	}
}

// TestSelectVictimsSparesBudgets: pods a PodDisruptionBudget protects are
// given back before the others, whatever their importance, and those that
// must go all the same are counted, as upstream's preemption does.
func TestSelectVictimsSparesBudgets(t *testing.T) {
	node := fwktest.Node("n", fwktest.Allocatable("cpu", "3"))
	labelled := func(app string) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Labels = map[string]string{"app": app} }
	}
	budget := func(app string, allowed int32, disrupted ...string) *policyv1.PodDisruptionBudget {
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, DisruptedPods: map[string]metav1.Time{}},
		}
		for _, name := range disrupted {
			pdb.Status.DisruptedPods[name] = metav1.NewTime(t0)
		}
		return pdb
	}
	pods := []*v1.Pod{
		fwktest.Pod("db", fwktest.Requests("cpu", "1"), prio(1), labelled("db")),
		fwktest.Pod("web", fwktest.Requests("cpu", "1"), prio(5), labelled("web")),
		fwktest.Pod("batch", fwktest.Requests("cpu", "1"), prio(5), labelled("batch")),
	}
	preemptor := fwktest.Pod("p", fwktest.Requests("cpu", "1"), prio(10))
	tests := []struct {
		name           string
		pdbs           []*policyv1.PodDisruptionBudget
		want           []string
		wantViolations int
	}{
		// Without budgets the least important pod goes.
		{name: "no budget", want: []string{"db"}},
		{name: "db protected: a more important pod goes instead", pdbs: []*policyv1.PodDisruptionBudget{budget("db", 0)}, want: []string{"batch"}},
		{name: "db's budget allows one", pdbs: []*policyv1.PodDisruptionBudget{budget("db", 1)}, want: []string{"db"}},
		{name: "db already counted by an eviction", pdbs: []*policyv1.PodDisruptionBudget{budget("db", 0, "db")}, want: []string{"db"}},
		{name: "every pod protected: one budget is broken", wantViolations: 1, want: []string{"db"},
			pdbs: []*policyv1.PodDisruptionBudget{budget("db", 0), budget("web", 0), budget("batch", 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := fwktest.NodeInfo(node, pods...)
			pi := framework.NewPodInfo(preemptor)
			fwk, state := prefiltered(t, pi, ni)
			victims, violations, st := selectVictims(context.Background(), fwk, state, pi, ni, nil, budgetsFrom(tt.pdbs), t0)
			if !checkVictims(t, victims, st, "", tt.want) {
				return
			}
			if violations != tt.wantViolations {
				t.Errorf("%d budget violations, want %d", violations, tt.wantViolations)
			}
		})
	}
}

func TestPickCandidate(t *testing.T) {
	pod := func(name string, p int32, ago time.Duration) *v1.Pod {
		return fwktest.Pod(name, prio(p), started(ago))
	}
	tests := []struct {
		name  string
		cands []candidate
		want  string
	}{
		{name: "fewest budgets broken first", want: "b", cands: []candidate{
			{node: "a", victims: []*v1.Pod{pod("a1", 1, 0)}, pdbViolations: 1},
			{node: "b", victims: []*v1.Pod{pod("b1", 5, 0), pod("b2", 5, 0)}},
		}},
		{name: "lowest highest-priority victim", want: "b", cands: []candidate{
			{node: "a", victims: []*v1.Pod{pod("a1", 5, 0)}},
			{node: "b", victims: []*v1.Pod{pod("b1", 3, 0), pod("b2", 3, 0), pod("b3", 3, 0)}},
		}},
		{name: "lowest sum of priorities", want: "a", cands: []candidate{
			{node: "a", victims: []*v1.Pod{pod("a1", 5, 0), pod("a2", 1, 0)}},
			{node: "b", victims: []*v1.Pod{pod("b1", 5, 0), pod("b2", 2, 0)}},
		}},
		{name: "negative priorities count as costs too", want: "a", cands: []candidate{
			{node: "a", victims: []*v1.Pod{pod("a1", -5, 0)}},
			{node: "b", victims: []*v1.Pod{pod("b1", -5, 0), pod("b2", -10, 0)}},
		}},
		{name: "newest most important victims", want: "b", cands: []candidate{
			{node: "a", victims: []*v1.Pod{pod("a1", 5, time.Hour)}},
			{node: "b", victims: []*v1.Pod{pod("b1", 5, time.Minute)}},
		}},
		{name: "first of equals", want: "a", cands: []candidate{
			{node: "a", victims: []*v1.Pod{pod("a1", 5, time.Minute)}},
			{node: "b", victims: []*v1.Pod{pod("b1", 5, time.Minute)}},
		}},
	}
	for _, tt := range tests {
		if got := pickCandidate(tt.cands, t0).node; got != tt.want {
			t.Errorf("%s: picked %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestEligibleToPreempt(t *testing.T) {
	never := v1.PreemptNever
	polite := fwktest.Pod("p", prio(10), func(p *v1.Pod) { p.Spec.PreemptionPolicy = &never })
	if ok, msg := eligibleToPreempt(polite, nil, nil); ok || msg != "not eligible due to preemptionPolicy=Never." {
		t.Errorf("Never: %v %q", ok, msg)
	}
	victim := fwktest.Pod("v", prio(1), fwktest.On("n"), func(p *v1.Pod) {
		now := metav1.NewTime(t0)
		p.DeletionTimestamp = &now
		p.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
	})
	waiting := fwktest.Pod("p", prio(10), func(p *v1.Pod) { p.Status.NominatedNodeName = "n" })
	if ok, msg := eligibleToPreempt(waiting, fwktest.NodeInfo(fwktest.Node("n"), victim), framework.NewStatus(framework.Unschedulable, "Insufficient cpu")); ok || msg != msgTerminatingVictim {
		t.Errorf("victim still terminating: %v %q", ok, msg)
	}
	// A nominated node that can no longer take the pod (tainted, say)
	// holds nothing for it: it may preempt elsewhere.
	if ok, msg := eligibleToPreempt(waiting, fwktest.NodeInfo(fwktest.Node("n"), victim), framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}")); !ok {
		t.Errorf("nominated node unresolvable: not eligible: %q", msg)
	}
	if ok, _ := eligibleToPreempt(waiting, fwktest.NodeInfo(fwktest.Node("n")), nil); !ok {
		t.Errorf("victims gone: not eligible")
	}
}

// TestPreemptionEvictsAndNominates runs the scheduler: a high-priority pod
// that fits nowhere evicts the low-priority pod filling the node, marked
// as upstream marks it, and is nominated to the node; a pod that never
// preempts only waits.
func TestPreemptionEvictsAndNominates(t *testing.T) {
	low := testPod("low", "3")
	low.Spec.NodeName = "only"
	low.Spec.Priority = ptr.To(int32(1))
	never := v1.PreemptNever
	polite := testPod("polite", "2")
	polite.Spec.Priority = ptr.To(int32(1000))
	polite.Spec.PreemptionPolicy = &never
	client := fake.NewClientset(testNode("only", "4", 110), low, polite)
	bindingReactor(t, client, nil)
	reg := prometheus.NewRegistry()
	stop := startScheduler(t, client, reg)
	defer stop()

	waitFor(t, "polite waits", func() (bool, error) {
		evs := eventsFor(t, client, "polite", "FailedScheduling")
		return len(evs) > 0 && evs[0].Message == "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.", nil
	})
	if _, err := client.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{}); err != nil {
		t.Fatalf("a pod that never preempts evicted low: %v", err)
	}

	high := testPod("high", "2")
	high.Spec.Priority = ptr.To(int32(100))
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), high, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "high nominated to only", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "only", nil
	})
	waitFor(t, "Preempted event", func() (bool, error) {
		evs := eventsFor(t, client, "low", "Preempted")
		return len(evs) > 0 && evs[0].Message == "Preempted by pod uid-high on node only" && evs[0].Type == v1.EventTypeNormal, nil
	})
	// The fake clientset deletes at once; the status patch came first.
	var patched bool
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" && a.(interface{ GetName() string }).GetName() == "low" {
			patched = true
		}
	}
	if !patched {
		t.Errorf("low was not given the DisruptionTarget condition before its deletion")
	}
	waitFor(t, "low deleted", func() (bool, error) {
		_, err := client.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{})
		return err != nil, nil
	})
	waitFor(t, "high bound to only", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "only", nil
	})

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var attempts float64
	var victims uint64
	for _, mf := range mfs {
		switch mf.GetName() {
		case "scheduler_preemption_attempts_total":
			attempts = mf.GetMetric()[0].GetCounter().GetValue()
		case "scheduler_preemption_victims":
			victims = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if attempts < 2 || victims < 1 {
		t.Errorf("scheduler_preemption_attempts_total %v (want at least 2), scheduler_preemption_victims observed %d times (want at least 1)", attempts, victims)
	}
}

// TestNominatedPodKeepsItsRoom: a pod nominated to a node (its victims
// leaving) holds its room against pods of lower priority, not against
// pods of higher priority.
func TestNominatedPodKeepsItsRoom(t *testing.T) {
	nominated := testPod("nominated", "3")
	nominated.Spec.Priority = ptr.To(int32(100))
	nominated.Status.NominatedNodeName = "only"
	// Gated, so that it stays pending with its nomination for the test.
	nominated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "test"}}
	low := testPod("low", "2")
	low.Spec.Priority = ptr.To(int32(1))
	client := fake.NewClientset(testNode("only", "4", 110), nominated, low)
	bindingReactor(t, client, nil)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()

	waitFor(t, "low kept off the nominated room", func() (bool, error) {
		evs := eventsFor(t, client, "low", "FailedScheduling")
		return len(evs) > 0 && strings.HasPrefix(evs[0].Message, "0/1 nodes are available: 1 Insufficient cpu."), nil
	})
	high := testPod("high", "2")
	high.Spec.Priority = ptr.To(int32(200))
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), high, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "high bound to only", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "only", nil
	})
	if p, err := client.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("low bound to %q (%v), want pending", p.Spec.NodeName, err)
	}
}

// TestPreemptionClearsLowerNominations: a preemptor takes over the node a
// lower-priority pod was nominated to; that pod's nomination is dropped.
func TestPreemptionClearsLowerNominations(t *testing.T) {
	low := testPod("low", "3")
	low.Spec.NodeName = "only"
	low.Spec.Priority = ptr.To(int32(1))
	mid := testPod("mid", "1")
	mid.Spec.Priority = ptr.To(int32(50))
	mid.Status.NominatedNodeName = "only"
	mid.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "test"}}
	high := testPod("high", "2")
	high.Spec.Priority = ptr.To(int32(100))
	client := fake.NewClientset(testNode("only", "4", 110), low, mid, high)
	bindingReactor(t, client, nil)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()

	waitFor(t, "mid's nomination dropped", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "mid", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "", nil
	})
	waitFor(t, "high bound to only", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "only", nil
	})
}

func antiAffinity(key, value string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}, TopologyKey: v1.LabelHostname}}}}
	}
}

// TestSelectVictimsBeyondResources: victims are also the pods whose
// (anti-)affinity or topology spread keeps the preemptor off the node, as
// upstream, with the PreFilter state updated for each simulated removal.
func TestSelectVictimsBeyondResources(t *testing.T) {
	node := fwktest.Node("n", fwktest.Labels("zone", "a"))
	other := fwktest.Node("m", fwktest.Labels("zone", "b"))
	spread := func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
			WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	tests := []struct {
		name       string
		pods       []*v1.Pod
		preemptor  *v1.Pod
		want       []string
		wantReason string
	}{
		{
			name:      "the preemptor's anti-affinity",
			pods:      []*v1.Pod{fwktest.Pod("db", fwktest.PodLabels("app", "db"), prio(1)), fwktest.Pod("other", prio(1))},
			preemptor: fwktest.Pod("p", prio(10), antiAffinity("app", "db")),
			want:      []string{"db"},
		},
		{
			name:       "anti-affinity to a more important pod",
			pods:       []*v1.Pod{fwktest.Pod("db", fwktest.PodLabels("app", "db"), prio(100)), fwktest.Pod("other", prio(1))},
			preemptor:  fwktest.Pod("p", prio(10), antiAffinity("app", "db")),
			wantReason: "node(s) didn't match pod anti-affinity rules",
		},
		{
			name:      "an existing pod's anti-affinity",
			pods:      []*v1.Pod{fwktest.Pod("picky", prio(1), antiAffinity("app", "web")), fwktest.Pod("other", prio(1))},
			preemptor: fwktest.Pod("p", prio(10), fwktest.PodLabels("app", "web")),
			want:      []string{"picky"},
		},
		{
			name: "topology spread",
			pods: []*v1.Pod{
				fwktest.Pod("web1", fwktest.PodLabels("app", "web"), prio(1), started(time.Hour)),
				fwktest.Pod("web2", fwktest.PodLabels("app", "web"), prio(1), started(time.Minute)),
				fwktest.Pod("other", prio(1)),
			},
			preemptor: fwktest.Pod("p", prio(10), fwktest.PodLabels("app", "web"), spread),
			want:      []string{"web1", "web2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := fwktest.NodeInfo(node, tt.pods...)
			pi := framework.NewPodInfo(tt.preemptor)
			fwk, state := prefiltered(t, pi, ni, fwktest.NodeInfo(other))
			if st := fwk.RunFilterPlugins(context.Background(), state, pi, ni); st.IsSuccess() {
				t.Fatalf("the preemptor fits on the node as it is")
			}
			victims, _, st := selectVictims(context.Background(), fwk, state, pi, ni, nil, nil, t0)
			if !checkVictims(t, victims, st, tt.wantReason, tt.want) {
				return
			}
			// The cycle's own state is left as it was.
			if st := fwk.RunFilterPlugins(context.Background(), state, pi, ni); st.IsSuccess() {
				t.Errorf("the simulation changed the cycle's state")
			}
		})
	}
}

// TestNominationDroppedWhenPreemptionCannotHelp: a pod nominated to a node
// where nothing can be preempted any more loses the nomination; a pod that
// never preempts keeps whatever nomination it has.
func TestNominationDroppedWhenPreemptionCannotHelp(t *testing.T) {
	big := testPod("big", "3")
	big.Spec.NodeName = "only"
	big.Spec.Priority = ptr.To(int32(1000))
	stale := testPod("stale", "2")
	stale.Spec.Priority = ptr.To(int32(10))
	stale.Status.NominatedNodeName = "only"
	never := v1.PreemptNever
	polite := testPod("polite", "2")
	polite.Spec.Priority = ptr.To(int32(10))
	polite.Spec.PreemptionPolicy = &never
	polite.Status.NominatedNodeName = "only"
	client := fake.NewClientset(testNode("only", "4", 110), big, stale, polite)
	bindingReactor(t, client, nil)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()

	waitFor(t, "stale's nomination dropped", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "stale", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "", nil
	})
	waitFor(t, "polite refused", func() (bool, error) {
		return len(eventsFor(t, client, "polite", "FailedScheduling")) > 0, nil
	})
	waitFor(t, "polite's condition written", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "polite", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})
	if p, err := client.CoreV1().Pods("default").Get(context.Background(), "polite", metav1.GetOptions{}); err != nil || p.Status.NominatedNodeName != "only" {
		t.Errorf("polite's nomination = %q (%v), want it kept", p.Status.NominatedNodeName, err)
	}
}

// checkVictims compares selectVictims' answer with the test's: the one
// reason it gives up for, or the victims; false when there is nothing more
// to check.
func checkVictims(t *testing.T, victims []*v1.Pod, st *framework.Status, wantReason string, want []string) bool {
	t.Helper()
	if wantReason != "" {
		if st == nil || len(st.Reasons()) != 1 || st.Reasons()[0] != wantReason {
			t.Fatalf("status %v, want %q", st, wantReason)
		}
		return false
	}
	if st != nil {
		t.Fatalf("status %v", st)
	}
	if got := names(victims); !slices.Equal(got, want) {
		t.Errorf("victims %v, want %v", got, want)
	}
	return true
}
