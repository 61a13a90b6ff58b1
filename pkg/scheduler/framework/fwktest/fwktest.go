// Package fwktest builds nodes, pods and snapshots for plugin tests and runs
// a plugin's extension points the way the framework does.
package fwktest

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/pkg/scheduler/cache"
	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Node returns a node with the hostname label, 4 cpu, 8Gi and 110 pods.
func Node(name string, opts ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
			v1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// Labels adds node labels.
func Labels(kv ...string) func(*v1.Node) {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

// Taint adds a taint.
func Taint(key, value string, effect v1.TaintEffect) func(*v1.Node) {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// Allocatable overrides allocatable quantities ("cpu", "2", "pods", "3").
func Allocatable(kv ...string) func(*v1.Node) {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Status.Allocatable[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

// Pod returns a pod in namespace "default" with one container.
func Pod(name string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Requests sets the first container's requests.
func Requests(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		rl := v1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers[0].Resources.Requests = rl
	}
}

// PodLabels sets pod labels.
func PodLabels(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// On sets spec.nodeName.
func On(node string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.NodeName = node } }

// NodeInfo builds a node info holding pods.
func NodeInfo(node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(node)
	for _, p := range pods {
		ni.AddPod(framework.NewPodInfo(p))
	}
	return ni
}

type handle struct{ l framework.NodeInfoLister }

func (h handle) SnapshotLister() framework.NodeInfoLister { return h.l }

// Handle returns a framework handle over a snapshot of nodes.
func Handle(nodes ...*framework.NodeInfo) framework.Handle {
	return handle{cache.NewSnapshotFromNodeInfos(nodes...)}
}

// Filter runs PreFilter (if any) and Filter on every node, as the framework
// does, and returns each node's status (nil: fits).
func Filter(t *testing.T, pl framework.Plugin, pod *v1.Pod, nodes ...*framework.NodeInfo) map[string]*framework.Status {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	pi := framework.NewPodInfo(pod)
	out := map[string]*framework.Status{}
	if pf, ok := pl.(framework.PreFilterPlugin); ok {
		st := pf.PreFilter(ctx, state, pi)
		if st.IsSkip() {
			for _, n := range nodes {
				out[n.Node().Name] = nil
			}
			return out
		}
		if !st.IsSuccess() {
			for _, n := range nodes {
				out[n.Node().Name] = st
			}
			return out
		}
	}
	f := pl.(framework.FilterPlugin)
	for _, n := range nodes {
		st := f.Filter(ctx, state, pi, n)
		if st.Code() == framework.Error {
			t.Fatalf("Filter on %s: %v", n.Node().Name, st.AsError())
		}
		out[n.Node().Name] = st
	}
	return out
}

// Score runs PreScore (if any), Score and NormalizeScore over nodes and
// returns the final scores; nil if the plugin skipped the pod.
func Score(t *testing.T, pl framework.Plugin, pod *v1.Pod, nodes ...*framework.NodeInfo) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	pi := framework.NewPodInfo(pod)
	if ps, ok := pl.(framework.PreScorePlugin); ok {
		st := ps.PreScore(ctx, state, pi, nodes)
		if st.IsSkip() {
			return nil
		}
		if !st.IsSuccess() {
			t.Fatalf("PreScore: %v", st.AsError())
		}
	}
	sp := pl.(framework.ScorePlugin)
	scores := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		s, st := sp.Score(ctx, state, pi, n)
		if !st.IsSuccess() {
			t.Fatalf("Score on %s: %v", n.Node().Name, st.AsError())
		}
		scores[i] = framework.NodeScore{Name: n.Node().Name, Score: s}
	}
	if norm, ok := pl.(framework.ScoreNormalizer); ok {
		if st := norm.NormalizeScore(ctx, state, pi, scores); !st.IsSuccess() {
			t.Fatalf("NormalizeScore: %v", st.AsError())
		}
	}
	out := map[string]int64{}
	for _, s := range scores {
		if s.Score < framework.MinNodeScore || s.Score > framework.MaxNodeScore {
			t.Fatalf("score %d for %s out of range", s.Score, s.Name)
		}
		out[s.Name] = s.Score
	}
	return out
}

// Outcome summarizes a status for table comparisons: "" when it fits, else
// the code and reasons.
func Outcome(st *framework.Status) string {
	if st.IsSuccess() {
		return ""
	}
	return st.Code().String() + ": " + st.Message()
}
