package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerStatusShowsMountsAndTheResourcesOfARunningContainer(t *testing.T) {
	h := newHarness(t)
	pod := testPod("res", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "data", MountPath: "/data"},
			{Name: "data", MountPath: "/ro", ReadOnly: true},
		}
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "besteffort", Image: testImage})
	})
	h.add(pod)
	h.sync(pod)
	s := h.status(pod)
	main, be := s.ContainerStatuses[0], s.ContainerStatuses[1]
	disabled := v1.RecursiveReadOnlyDisabled
	wantMounts := []v1.VolumeMountStatus{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: &disabled},
	}
	if !equality.Semantic.DeepEqual(main.VolumeMounts, wantMounts) {
		t.Errorf("volumeMounts = %+v, want %+v", main.VolumeMounts, wantMounts)
	}
	if main.Resources == nil || !equality.Semantic.DeepEqual(*main.Resources, pod.Spec.Containers[0].Resources) {
		t.Errorf("resources = %+v, want the spec's", main.Resources)
	}
	// Upstream shows `resources: {}` for a running container without any.
	if be.Resources == nil || be.Resources.Limits != nil || be.Resources.Requests != nil {
		t.Errorf("best-effort resources = %+v, want empty", be.Resources)
	}

	if !equality.Semantic.DeepEqual(main.AllocatedResources, pod.Spec.Containers[0].Resources.Requests) || be.AllocatedResources != nil {
		t.Errorf("allocatedResources = %v and %v, want the requests", main.AllocatedResources, be.AllocatedResources)
	}

	// A terminated container keeps reporting them, as upstream's does.
	h.rt.Exit(h.running(pod, "besteffort").Id, 1)
	h.rt.Exit(h.running(pod, "main").Id, 1)
	h.sync(pod)
	s = h.status(pod)
	main, be = s.ContainerStatuses[0], s.ContainerStatuses[1]
	if main.State.Terminated == nil || main.Resources == nil || !equality.Semantic.DeepEqual(*main.Resources, pod.Spec.Containers[0].Resources) ||
		!equality.Semantic.DeepEqual(main.AllocatedResources, pod.Spec.Containers[0].Resources.Requests) {
		t.Errorf("terminated main: state %+v, resources %+v, allocated %v", main.State, main.Resources, main.AllocatedResources)
	}
	if be.State.Terminated == nil || be.Resources == nil || be.Resources.Limits != nil || be.Resources.Requests != nil {
		t.Errorf("terminated best-effort: state %+v, resources %+v; want empty resources", be.State, be.Resources)
	}
}

func TestPrivilegedContainerStarts(t *testing.T) {
	h := newHarness(t)
	yes := true
	pod := testPod("priv", func(p *v1.Pod) {
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: &yes}
	})
	h.add(pod)
	h.sync(pod)
	if cs := h.status(pod).ContainerStatuses[0]; cs.State.Running == nil {
		t.Fatalf("privileged container: %+v", cs.State)
	}
}

// A container that failed to start (StartError, which never ran) reports
// the runtime's start time, 1970-01-01 as upstream shows it, not a null.
func TestStartErrorReportsTheEpochAsItsStart(t *testing.T) {
	h := newHarness(t)
	pod := testPod("starterr")
	st := &podState{}
	term := h.kl.terminated(st, &pod.Spec.Containers[0], &runtimeapi.ContainerStatus{
		Id: "c1", State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 128, Reason: "StartError", FinishedAt: 1e18})
	if want := metav1.NewTime(time.Unix(0, 0)); !term.StartedAt.Equal(&want) || term.StartedAt.IsZero() {
		t.Fatalf("startedAt %v, want %v", term.StartedAt, want)
	}
	if term.Reason != "StartError" || term.ExitCode != 128 {
		t.Fatalf("terminated %+v", term)
	}
}

// The status keeps the QoS class the API server gave the pod (it may not
// change); a pod with pod-level resources got its containers' BestEffort,
// so that every status patch was refused and the pod stayed Pending.
func TestQOSClassIsTheOneTheAPIServerGave(t *testing.T) {
	guaranteed := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	podLevel := func(p *v1.Pod) {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: guaranteed, Limits: guaranteed}
	}
	if got := qosClass(testPod("computed", podLevel)); got != v1.PodQOSGuaranteed {
		t.Fatalf("pod-level resources: %s, want Guaranteed", got)
	}
	h := newHarness(t)
	pod := testPod("given", podLevel, func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBurstable })
	h.add(pod)
	h.sync(pod)
	if got := h.status(pod).QOSClass; got != v1.PodQOSBurstable {
		t.Fatalf("status qosClass %s, want the API server's Burstable", got)
	}
}
