package kubelet

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDownwardEnvShowsHostIPsAndNodeAllocatableForMissingLimits(t *testing.T) {
	h := newHarness(t)
	ref := func(res, divisor string) *v1.EnvVarSource {
		s := &v1.ResourceFieldSelector{Resource: res}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &v1.EnvVarSource{ResourceFieldRef: s}
	}
	pod := testPod("downward", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		p.Spec.Containers[0].Env = []v1.EnvVar{
			{Name: "HOST_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			{Name: "MEM_LIMIT", ValueFrom: ref("limits.memory", "")},
			{Name: "CPU_LIMIT", ValueFrom: ref("limits.cpu", "1m")},
			{Name: "MEM_REQUEST", ValueFrom: ref("requests.memory", "1Mi")},
			{Name: "CPU_REQUEST", ValueFrom: ref("requests.cpu", "")},
		}
	})
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")
	if c == nil {
		t.Fatalf("not running: %+v", h.status(pod).ContainerStatuses[0].State)
	}
	env := map[string]string{}
	for _, kv := range h.rt.Config(c.Id).Envs {
		env[kv.Key] = string(kv.Value)
	}
	alloc := h.kl.allocatable()
	want := map[string]string{
		"HOST_IPS":    "192.168.1.10",
		"MEM_LIMIT":   strconv.FormatInt(alloc.Memory().Value(), 10),
		"CPU_LIMIT":   strconv.FormatInt(alloc.Cpu().MilliValue(), 10),
		"MEM_REQUEST": "64",
		"CPU_REQUEST": "0",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}
