package imagelocality

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func images(size int64, names ...string) func(*v1.Node) {
	return func(n *v1.Node) {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
	}
}

func image(img string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Containers[0].Image = img } }

func TestScore(t *testing.T) {
	const mib = 1024 * 1024
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  map[string]int64
	}{
		{"large image present on one of two nodes", Pod("p", image("app:1")),
			[]*v1.Node{Node("has", images(1000*mib, "app:1")), Node("lacks")},
			// 1000 MiB × (1 of 2 nodes) = 500 MiB → (500-23)/(1000-23).
			map[string]int64{"has": 48, "lacks": 0}},
		{"bare name matches :latest", Pod("p", image("app")),
			[]*v1.Node{Node("has", images(1000*mib, "docker.io/x/app:1", "app:latest")), Node("lacks")},
			map[string]int64{"has": 48, "lacks": 0}},
		{"small images do not count", Pod("p", image("tiny:1")),
			[]*v1.Node{Node("has", images(10*mib, "tiny:1")), Node("lacks")},
			map[string]int64{"has": 0, "lacks": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nis := tt.nodes
			a, b := NodeInfo(nis[0]), NodeInfo(nis[1])
			pl, _ := New(Handle(a, b))
			got := Score(t, pl, tt.pod, a, b)
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("score[%s] = %d, want %d", n, got[n], w)
				}
			}
		})
	}
}
