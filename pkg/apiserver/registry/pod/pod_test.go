package pod

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/api/podqos"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// newPod is a pod as a client would send it, before defaulting.
func newPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
}

// created runs the create path of the generic handler on p.
func created(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	s := Resource(clocktesting.NewFakePassiveClock(now)).Strategy
	s.Default(p)
	s.PrepareForCreate(context.Background(), p)
	if errs := s.Validate(context.Background(), p); len(errs) > 0 {
		t.Fatalf("create: %v", errs)
	}
	return p
}

func TestDefaults(t *testing.T) {
	p := newPod()
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
		{Name: "scratch"},
	}
	Default(p)

	s := p.Spec
	c := s.Containers[0]
	checks := []struct {
		name      string
		got, want interface{}
	}{
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"securityContext", *s.SecurityContext, corev1.PodSecurityContext{}},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"probe timeout", c.ReadinessProbe.TimeoutSeconds, int32(1)},
		{"probe period", c.ReadinessProbe.PeriodSeconds, int32(10)},
		{"probe success", c.ReadinessProbe.SuccessThreshold, int32(1)},
		{"probe failure", c.ReadinessProbe.FailureThreshold, int32(3)},
		{"httpGet scheme", c.ReadinessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"httpGet path", c.ReadinessProbe.HTTPGet.Path, "/"},
		{"requests from limits", c.Resources.Requests.Cpu().String(), "1"},
		{"configMap defaultMode", *s.Volumes[0].ConfigMap.DefaultMode, int32(0644)},
		{"hostPath type", *s.Volumes[1].HostPath.Type, corev1.HostPathUnset},
		{"sourceless volume is emptyDir", s.Volumes[2].EmptyDir != nil, true},
		{"tolerations untouched", len(s.Tolerations), 0},
	}
	for _, ch := range checks {
		if !apiequality.Semantic.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestDefaultMirrorsSingularFields(t *testing.T) {
	p := newPod()
	p.Spec.DeprecatedServiceAccount = "builder"
	p.Status.PodIP, p.Status.HostIPs = "10.244.0.9", []corev1.HostIP{{IP: "192.168.1.10"}}
	Default(p)
	if p.Spec.ServiceAccountName != "builder" || p.Spec.DeprecatedServiceAccount != "builder" {
		t.Errorf("service account %q / %q", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
	if len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != "10.244.0.9" || p.Status.HostIP != "192.168.1.10" {
		t.Errorf("status IPs %+v", p.Status)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"localhost:5000/busybox", corev1.PullAlways},
		{"localhost:5000/busybox:1.36", corev1.PullIfNotPresent},
		{"busybox@sha256:0123456789abcdef", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := defaultPullPolicy(tt.image); got != tt.want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestPrepareForCreate(t *testing.T) {
	p := newPod()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}
	p.Generation = 7
	p = created(t, p)
	if p.Status.Phase != corev1.PodPending || p.Status.PodIP != "" {
		t.Errorf("status = %+v, want only phase Pending", p.Status)
	}
	if p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qosClass = %s, want BestEffort", p.Status.QOSClass)
	}
	if p.Generation != 1 {
		t.Errorf("generation = %d, want 1", p.Generation)
	}
	if p.Spec.Priority == nil || *p.Spec.Priority != 0 {
		t.Errorf("priority = %v, want 0", p.Spec.Priority)
	}
	if p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v, want PreemptLowerPriority", p.Spec.PreemptionPolicy)
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   string // prefix of the only error; "" for none
	}{
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, ""},
		{"replacement without priority", func(p *corev1.Pod) { p.Spec.Priority, p.Spec.PreemptionPolicy = nil, nil }, ""},
		{"priority changed", func(p *corev1.Pod) { p.Spec.Priority = ptr(int32(5)) },
			"spec: Forbidden: pod updates may not change fields other than"},
		{"add toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, ""},
		{"remove toleration", func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"},
		{"shorter deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(10)) }, ""},
		{"longer deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(1000)) },
			"spec.activeDeadlineSeconds: Invalid value: 1000: must be less than or equal to previous value"},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			"spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" },
			"spec: Forbidden: pod updates may not change fields other than"},
		{"add container", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "b:1",
				ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile})
		}, "spec.containers: Forbidden: pod updates may not add or remove containers"},
		{"empty image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			"spec.containers[0].image: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newPod()
			old.Spec.ActiveDeadlineSeconds = ptr(int64(100))
			old.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpEqual, Value: "b"}}
			old = created(t, old)
			p := old.DeepCopy()
			tt.mutate(p)
			s := Resource(clocktesting.NewFakePassiveClock(now)).Strategy
			s.PrepareForUpdate(context.Background(), p, old)
			errs := s.ValidateUpdate(context.Background(), p, old)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tt.want) {
				t.Fatalf("errors = %v, want one starting %q", errs, tt.want)
			}
		})
	}
}

func TestGenerationAndStatusOnUpdate(t *testing.T) {
	old := created(t, newPod())
	old.Status.Phase = corev1.PodRunning
	s := Resource(clocktesting.NewFakePassiveClock(now)).Strategy

	same := old.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	same.Status.Phase = corev1.PodFailed
	s.PrepareForUpdate(context.Background(), same, old)
	if same.Generation != 1 || same.Status.Phase != corev1.PodRunning {
		t.Errorf("metadata-only update: generation %d phase %s, want 1 Running", same.Generation, same.Status.Phase)
	}

	changed := old.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:1.28"
	s.PrepareForUpdate(context.Background(), changed, old)
	if changed.Generation != 2 {
		t.Errorf("spec update: generation %d, want 2", changed.Generation)
	}
}

func TestStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		oldPhase corev1.PodPhase
		mutate   func(p *corev1.Pod)
		want     string
	}{
		{"running with ip", corev1.PodPending, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = "10.244.0.5"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}}
		}, ""},
		{"spec change is ignored", corev1.PodPending, func(p *corev1.Pod) { p.Spec.NodeName = "elsewhere" }, ""},
		{"unknown phase", corev1.PodPending, func(p *corev1.Pod) { p.Status.Phase = "Sleeping" },
			`status.phase: Unsupported value: "Sleeping"`},
		{"dead container restarted under Never", corev1.PodRunning, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"},
		{"bad ip", corev1.PodPending, func(p *corev1.Pod) { p.Status.PodIP = "10.1" },
			`status.podIP: Invalid value: "10.1"`},
		{"qos class changed", corev1.PodPending, func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed },
			"status.qosClass: Invalid value: \"Guaranteed\": field is immutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := created(t, newPod())
			old.Spec.NodeName = "node-1"
			old.Status.Phase = tt.oldPhase
			old.Spec.RestartPolicy = corev1.RestartPolicyNever
			old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
			p := old.DeepCopy()
			tt.mutate(p)
			s := Resource(clocktesting.NewFakePassiveClock(now)).Status
			s.PrepareForUpdate(context.Background(), p, old)
			if p.Spec.NodeName != "node-1" {
				t.Fatalf("status update changed spec.nodeName to %q", p.Spec.NodeName)
			}
			errs := s.ValidateUpdate(context.Background(), p, old)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tt.want) {
				t.Fatalf("errors = %v, want one starting %q", errs, tt.want)
			}
		})
	}
}

// A container's own restartPolicy and restartPolicyRules, and a
// RestartAllContainers rule anywhere in the pod, let a terminated container
// of a Never pod run again, as upstream's status validation allows: the
// kubelet's statuses of such restarts were refused.
func TestStatusUpdateAllowsRestartsByContainerRules(t *testing.T) {
	never, always := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyAlways
	rule := func(action corev1.ContainerRestartRuleAction, op corev1.ContainerRestartRuleOnExitCodesOperator) []corev1.ContainerRestartRule {
		return []corev1.ContainerRestartRule{{Action: action, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: []int32{42}}}}
	}
	tests := []struct {
		name    string
		exit    int32
		mutate  func(*corev1.Pod)
		allowed bool
	}{
		{"no rule", 42, func(*corev1.Pod) {}, false},
		{"Restart rule matches", 42, func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = &never
			p.Spec.Containers[0].RestartPolicyRules = rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn)
		}, true},
		{"Restart rule does not match", 1, func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = &never
			p.Spec.Containers[0].RestartPolicyRules = rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn)
		}, false},
		{"NotIn rule matches", 1, func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = &never
			p.Spec.Containers[0].RestartPolicyRules = rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpNotIn)
		}, true},
		{"container Always", 0, func(p *corev1.Pod) { p.Spec.Containers[0].RestartPolicy = &always }, true},
		{"RestartAllContainers rule on another container", 0, func(p *corev1.Pod) {
			c := corev1.Container{Name: "other", Image: "busybox", RestartPolicy: &never,
				RestartPolicyRules: rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpIn)}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newPod()
			old.Spec.RestartPolicy = corev1.RestartPolicyNever
			tt.mutate(old)
			old = created(t, old)
			old.Spec.NodeName = "node-1"
			old.Status.Phase = corev1.PodRunning
			old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: tt.exit}}}}
			p := old.DeepCopy()
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			s := Resource(clocktesting.NewFakePassiveClock(now)).Status
			s.PrepareForUpdate(context.Background(), p, old)
			errs := s.ValidateUpdate(context.Background(), p, old)
			if allowed := len(errs) == 0; allowed != tt.allowed {
				t.Fatalf("allowed = %v (%v), want %v", allowed, errs, tt.allowed)
			}
		})
	}
}

// An init container's own restartPolicy decides whether its terminated
// status may run again, and a container's own Never holds even in an Always
// pod, as upstream's status validation with container restart rules.
func TestStatusUpdateWeighsContainersOwnPolicies(t *testing.T) {
	never, onFailure := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure
	tests := []struct {
		name      string
		podPolicy corev1.RestartPolicy
		init      bool
		policy    *corev1.ContainerRestartPolicy
		exit      int32
		allowed   bool
	}{
		{"OnFailure init container of a Never pod, failed", corev1.RestartPolicyNever, true, &onFailure, 1, true},
		{"OnFailure init container of a Never pod, succeeded", corev1.RestartPolicyNever, true, &onFailure, 0, false},
		{"init container of a Never pod", corev1.RestartPolicyNever, true, nil, 1, false},
		{"init container of an Always pod", corev1.RestartPolicyAlways, true, nil, 0, true},
		{"Never container of an Always pod", corev1.RestartPolicyAlways, false, &never, 1, false},
		{"container of an Always pod", corev1.RestartPolicyAlways, false, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newPod()
			old.Spec.RestartPolicy = tt.podPolicy
			c := &old.Spec.Containers[0]
			if tt.init {
				old.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
				c = &old.Spec.InitContainers[0]
			}
			c.RestartPolicy = tt.policy
			old = created(t, old)
			old.Spec.NodeName = "node-1"
			old.Status.Phase = corev1.PodPending
			terminated := []corev1.ContainerStatus{{Name: c.Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: tt.exit}}}}
			running := []corev1.ContainerStatus{{Name: c.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p := old.DeepCopy()
			if tt.init {
				old.Status.InitContainerStatuses, p.Status.InitContainerStatuses = terminated, running
			} else {
				old.Status.ContainerStatuses, p.Status.ContainerStatuses = terminated, running
			}
			s := Resource(clocktesting.NewFakePassiveClock(now)).Status
			s.PrepareForUpdate(context.Background(), p, old)
			errs := s.ValidateUpdate(context.Background(), p, old)
			if allowed := len(errs) == 0; allowed != tt.allowed {
				t.Fatalf("allowed = %v (%v), want %v", allowed, errs, tt.allowed)
			}
		})
	}
}

func TestGracePeriod(t *testing.T) {
	tests := []struct {
		name      string
		node      string
		phase     corev1.PodPhase
		requested *int64
		want      int64
	}{
		{"scheduled running", "n1", corev1.PodRunning, nil, 30},
		{"client asks for 5", "n1", corev1.PodRunning, ptr(int64(5)), 5},
		{"unscheduled", "", corev1.PodPending, ptr(int64(5)), 0},
		{"succeeded", "n1", corev1.PodSucceeded, nil, 0},
		{"failed", "n1", corev1.PodFailed, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod()
			Default(p)
			p.Spec.NodeName = tt.node
			p.Status.Phase = tt.phase
			if got := GracePeriodFor(p, tt.requested); got != tt.want {
				t.Errorf("GracePeriodFor = %d, want %d", got, tt.want)
			}
			del := Resource(clocktesting.NewFakePassiveClock(now)).Deletion
			if got := del.GracePeriod(p, tt.requested); got != tt.want {
				t.Errorf("Deletion.GracePeriod = %d, want %d", got, tt.want)
			}
			if tt.requested == nil {
				if got := GracePeriod(p); got != tt.want {
					t.Errorf("GracePeriod = %d, want %d", got, tt.want)
				}
			}
		})
	}
}

func TestAttrs(t *testing.T) {
	p := created(t, newPod())
	p.Spec.NodeName = "node-1"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.2"}}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	_, fs, err := r.ObjectAttrs(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"metadata.name": "web", "metadata.namespace": "default", "spec.nodeName": "node-1",
		"spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "",
		"spec.hostNetwork": "false", "status.phase": "Pending", "status.podIP": "10.244.1.2", "status.nominatedNodeName": "",
	}
	for k, v := range want {
		if got, ok := fs[k]; !ok || got != v {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, v)
		}
	}
}

func TestValidateReportsUpstreamPaths(t *testing.T) {
	p := newPod()
	p.Spec.Containers[0].Image = ""
	Default(p)
	errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), p)
	want := field.ErrorList{field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), "")}
	if errs.ToAggregate().Error() != want.ToAggregate().Error() {
		t.Fatalf("errors = %v, want %v", errs, want)
	}
}

func TestStrategyIgnoresOtherTypes(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	other := &corev1.Node{}
	r.Strategy.Default(other)
	r.Strategy.PrepareForCreate(context.Background(), other)
	r.Strategy.PrepareForUpdate(context.Background(), other, other)
	if errs := r.Strategy.Validate(context.Background(), other); len(errs) != 1 {
		t.Fatalf("Validate(node) = %v, want one internal error", errs)
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name       string
		containers []corev1.ResourceRequirements
		want       corev1.PodQOSClass
	}{
		{"nothing", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"limits equal requests", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"limits only (defaulted requests)", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"cpu limit only", []corev1.ResourceRequirements{{Limits: rl("1", "")}}, corev1.PodQOSBurstable},
		{"requests below limits", []corev1.ResourceRequirements{{Requests: rl("500m", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSBurstable},
		{"one guaranteed one best effort", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}, {}}, corev1.PodQOSBurstable},
	}
	podLevel := corev1.ResourceRequirements{Limits: rl("2", "2Gi")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod()
			p.Spec.Containers = nil
			for i, r := range tt.containers {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: "x:1", Resources: r})
			}
			Default(p)
			if got := podqos.Class(p); got != tt.want {
				t.Errorf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("pod-level limits decide", func(t *testing.T) {
		p := newPod()
		p.Spec.Resources = &podLevel
		Default(p)
		if got := podqos.Class(p); got != corev1.PodQOSGuaranteed {
			t.Errorf("QOSClass = %s, want Guaranteed", got)
		}
	})
}
