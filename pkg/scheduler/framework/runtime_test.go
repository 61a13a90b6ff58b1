package framework_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

// fakePlugin rejects nodes named in reject, scores nodes by score, and can
// skip its Filter through PreFilter.
type fakePlugin struct {
	name   string
	skip   bool
	reject map[string]bool
	score  map[string]int64
}

func (p *fakePlugin) Name() string { return p.name }
func (p *fakePlugin) PreFilter(context.Context, *framework.CycleState, *framework.PodInfo) *framework.Status {
	if p.skip {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}
func (p *fakePlugin) Filter(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	if p.reject[n.Node().Name] {
		return framework.NewStatus(framework.Unschedulable, p.name+" says no")
	}
	return nil
}
func (p *fakePlugin) Score(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	return p.score[n.Node().Name], nil
}

type binder struct{}

func (binder) Name() string { return "binder" }
func (binder) Bind(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	return nil
}

func build(t *testing.T, plugins ...framework.PluginConfig) *framework.Framework {
	t.Helper()
	plugins = append(plugins, framework.PluginConfig{Name: "binder", Factory: func(framework.Handle) (framework.Plugin, error) { return binder{}, nil }})
	f, err := framework.New("test", plugins, nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func cfg(p *fakePlugin, weight int64) framework.PluginConfig {
	return framework.PluginConfig{Name: p.name, Weight: weight, Factory: func(framework.Handle) (framework.Plugin, error) { return p, nil }}
}

func TestFilterRunsUntilFirstRejectionAndHonoursSkip(t *testing.T) {
	tests := []struct {
		name       string
		a, b       *fakePlugin
		wantPlugin string
	}{
		{"first rejecting plugin wins", &fakePlugin{name: "a", reject: map[string]bool{"n": true}}, &fakePlugin{name: "b", reject: map[string]bool{"n": true}}, "a"},
		{"skipped plugin does not filter", &fakePlugin{name: "a", skip: true, reject: map[string]bool{"n": true}}, &fakePlugin{name: "b", reject: map[string]bool{"n": true}}, "b"},
		{"all pass", &fakePlugin{name: "a"}, &fakePlugin{name: "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := build(t, cfg(tt.a, 0), cfg(tt.b, 0))
			state := framework.NewCycleState()
			pi := framework.NewPodInfo(Pod("p"))
			if st := f.RunPreFilterPlugins(context.Background(), state, pi); !st.IsSuccess() {
				t.Fatal(st.AsError())
			}
			st := f.RunFilterPlugins(context.Background(), state, pi, NodeInfo(Node("n")))
			if st.Plugin() != tt.wantPlugin {
				t.Errorf("rejected by %q, want %q", st.Plugin(), tt.wantPlugin)
			}
		})
	}
}

func TestScoresAreWeighted(t *testing.T) {
	a := &fakePlugin{name: "a", score: map[string]int64{"n1": 100, "n2": 0}}
	b := &fakePlugin{name: "b", score: map[string]int64{"n1": 0, "n2": 60}}
	f := build(t, cfg(a, 1), cfg(b, 2))
	nodes := []*framework.NodeInfo{NodeInfo(Node("n1")), NodeInfo(Node("n2"))}
	totals, st := f.RunScorePlugins(context.Background(), framework.NewCycleState(), framework.NewPodInfo(Pod("p")), nodes, nil)
	if !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	if totals[0] != 100 || totals[1] != 120 {
		t.Errorf("totals %v, want [100 120]", totals)
	}
}

func TestScoreOutOfRangeIsAnError(t *testing.T) {
	a := &fakePlugin{name: "a", score: map[string]int64{"n1": 101}}
	f := build(t, cfg(a, 1))
	_, st := f.RunScorePlugins(context.Background(), framework.NewCycleState(), framework.NewPodInfo(Pod("p")), []*framework.NodeInfo{NodeInfo(Node("n1"))}, nil)
	if st.Code() != framework.Error {
		t.Errorf("code %v, want Error", st.Code())
	}
}
