package kubelet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodOverItsEmptyDirSizeLimitIsEvicted(t *testing.T) {
	h := newHarness(t)
	limit := resource.MustParse("1Mi")
	pod := testPod("hog", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	})
	h.add(pod)
	h.sync(pod)
	if s := h.status(pod); s.Phase != v1.PodRunning {
		t.Fatalf("phase %s before writing", s.Phase)
	}
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mounts["scratch"], "big"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(10 * time.Second)
	h.sync(pod)

	s := h.status(pod)
	msg := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	if s.Phase != v1.PodFailed || s.Reason != "Evicted" || s.Message != msg {
		t.Fatalf("phase %q reason %q message %q", s.Phase, s.Reason, s.Message)
	}
	var dt *v1.PodCondition
	for i := range s.Conditions {
		if s.Conditions[i].Type == v1.DisruptionTarget {
			dt = &s.Conditions[i]
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" || dt.Message != msg {
		t.Fatalf("DisruptionTarget condition = %+v", dt)
	}
	if h.running(pod, "main") != nil {
		t.Fatal("the evicted pod's container still runs")
	}
}
