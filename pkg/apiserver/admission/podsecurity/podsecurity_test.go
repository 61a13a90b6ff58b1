package podsecurity

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

type fakeNamespaces map[string]*corev1.Namespace

func (f fakeNamespaces) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := f[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
}

func ns(labels map[string]string) fakeNamespaces {
	return fakeNamespaces{"ns": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: labels}}}
}

var pods = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Namespaced: true}

func yes() *bool { b := true; return &b }

func podWith(mutate func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestValidate(t *testing.T) {
	baseline := ns(map[string]string{EnforceLabel: Baseline})
	restrictedNS := ns(map[string]string{EnforceLabel: Restricted, EnforceVersionLabel: "v1.36"})
	tests := []struct {
		name    string
		ns      fakeNamespaces
		pod     *corev1.Pod
		wantErr string
	}{
		{"plain pod in baseline", baseline, podWith(nil), ""},
		{"privileged in unlabeled namespace", ns(nil), podWith(privilegedContainer), ""},
		{"privileged", baseline, podWith(privilegedContainer), `pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`},
		{"host namespaces and hostPath", baseline, podWith(func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID = true, true
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}), `pods "x" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "root")`},
		{"host port", baseline, podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}), `pods "x" is forbidden: violates PodSecurity "baseline:latest": hostPort (container "c" uses hostPort 8080)`},
		{"added capability", baseline, podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CHOWN", "NET_ADMIN"}}}
		}), `pods "x" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "c" must not include "NET_ADMIN" in securityContext.capabilities.add)`},
		{"default capability allowed", baseline, podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CHOWN"}}}
		}), ""},
		{"unsafe sysctl", baseline, podWith(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
		}), `forbidden sysctls (kernel.msgmax)`},
		{"restricted wants hardening", restrictedNS, podWith(nil),
			`pods "x" is forbidden: violates PodSecurity "restricted:v1.36": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"restricted satisfied", restrictedNS, podWith(func(p *corev1.Pod) {
			no := false
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: yes(), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Name: "x", Object: tt.pod}
			err := New(tt.ns).Validate(context.Background(), a)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("error %v, want Forbidden", err)
			}
			if got := err.Error(); !strings.Contains(got, tt.wantErr) {
				t.Fatalf("message\n%s\nwant\n%s", got, tt.wantErr)
			}
		})
	}
}

var nsRes = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "namespaces"}

func namespace(labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: labels}}
}

func TestNamespaceLabels(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		wantErr string
	}{
		{"levels and versions", map[string]string{EnforceLabel: Baseline, EnforceVersionLabel: "v1.36", AuditLabel: Restricted,
			AuditVersionLabel: "latest", WarnLabel: Privileged, WarnVersionLabel: "v1.0"}, ""},
		{"bad enforce level", map[string]string{EnforceLabel: "strict"},
			`Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`},
		{"bad audit level", map[string]string{AuditLabel: "Restricted"},
			`Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "Restricted": must be one of privileged, baseline, restricted`},
		{"bad warn version", map[string]string{WarnLabel: Baseline, WarnVersionLabel: "1.36"},
			`Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.36": must be "latest" or "v1.x"`},
		{"leading zero", map[string]string{EnforceVersionLabel: "v1.01"}, `Invalid value: "v1.01": must be "latest" or "v1.x"`},
		{"every bad label named", map[string]string{EnforceLabel: "x", AuditVersionLabel: "v2.0"},
			`Namespace "team" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "x": must be one of privileged, baseline, restricted, ` +
				`metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "v2.0": must be "latest" or "v1.x"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New(fakeNamespaces{}).Validate(context.Background(),
				&admission.Attributes{Operation: admission.Create, Resource: nsRes, Name: "team", Object: namespace(tt.labels)})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || err.(apierrors.APIStatus).Status().Code != 422 {
				t.Fatalf("error %v, want 422 Invalid", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("message\n%s\nwant\n%s", err, tt.wantErr)
			}
		})
	}

	// An update is refused only when it changes what is wrong, so that a
	// namespace labelled before the check can still be updated.
	update := func(old, cur map[string]string) error {
		return New(fakeNamespaces{}).Validate(context.Background(), &admission.Attributes{Operation: admission.Update,
			Resource: nsRes, Name: "team", Object: namespace(cur), OldObject: namespace(old)})
	}
	if err := update(map[string]string{EnforceLabel: "strict"}, map[string]string{EnforceLabel: "strict", "team": "a"}); err != nil {
		t.Errorf("update keeping a bad label: %v", err)
	}
	if err := update(map[string]string{EnforceLabel: "strict"}, map[string]string{EnforceLabel: "stricter"}); !apierrors.IsInvalid(err) {
		t.Errorf("update changing a bad label: %v, want Invalid", err)
	}
	if err := update(nil, map[string]string{WarnLabel: "all"}); !apierrors.IsInvalid(err) {
		t.Errorf("update adding a bad label: %v, want Invalid", err)
	}

	// A stored namespace with an unknown enforce level is held to
	// restricted; an unknown warn level warns about nothing (as upstream).
	pod := podWith(nil)
	err := New(ns(map[string]string{EnforceLabel: "strict"})).Validate(context.Background(),
		&admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Name: "x", Object: pod})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
		t.Fatalf("error %v, want a restricted refusal", err)
	}
	header, ctx := recordWarnings(context.Background())
	err = New(ns(map[string]string{WarnLabel: "strict"})).Validate(ctx,
		&admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Name: "x", Object: pod})
	if err != nil || len(header.Values("Warning")) != 0 {
		t.Fatalf("bad warn label: error %v, warnings %q; want neither", err, header.Values("Warning"))
	}
}

// recordWarnings returns a context under parent whose request's warnings
// land in header.
func recordWarnings(parent context.Context) (http.Header, context.Context) {
	header := http.Header{}
	info := &request.Info{}
	info.WarnTo(header)
	return header, request.WithInfo(parent, info)
}

func warnings(t *testing.T, header http.Header) []string {
	t.Helper()
	var got []string
	for _, v := range header.Values("Warning") {
		msg, err := strconv.Unquote(strings.TrimPrefix(v, "299 - "))
		if err != nil {
			t.Fatalf("Warning header %q: %v", v, err)
		}
		got = append(got, msg)
	}
	return got
}

func TestPodUpdate(t *testing.T) {
	restrictedNS := ns(map[string]string{EnforceLabel: Restricted})
	old := podWith(nil)
	tests := []struct {
		name    string
		sub     string
		mutate  func(p *corev1.Pod)
		refused bool
	}{
		{"labels and annotations", "", func(p *corev1.Pod) {
			p.Labels = map[string]string{"a": "b"}
			p.Annotations = map[string]string{"note": "x"}
		}, false},
		{"tolerations and deadline", "", func(p *corev1.Pod) {
			d := int64(30)
			p.Spec.ActiveDeadlineSeconds = &d
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}, false},
		{"status", "status", func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "nginx"
			p.Status.Phase = corev1.PodRunning
		}, false},
		{"image", "", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx" }, true},
		{"seccomp annotation", "", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.SeccompContainerAnnotationKeyPrefix + "c": "unconfined"}
		}, true},
		{"ephemeral container added", "ephemeralcontainers", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := old.DeepCopy()
			tt.mutate(cur)
			err := New(restrictedNS).Validate(context.Background(), &admission.Attributes{Operation: admission.Update,
				Resource: pods, Subresource: tt.sub, Namespace: "ns", Name: "x", Object: cur, OldObject: old})
			if !tt.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`) {
				t.Fatalf("error %v, want a restricted refusal", err)
			}
		})
	}
}

// fakePods lists pods in namespace "team"; err fails the list.
type fakePods struct {
	pods []*corev1.Pod
	err  error
}

func (f *fakePods) ListObjects(_ context.Context, gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	if gr != (schema.GroupResource{Resource: "pods"}) || namespace != "team" {
		return nil, fmt.Errorf("unexpected list of %s in %q", gr, namespace)
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([]runtime.Object, len(f.pods))
	for i, p := range f.pods {
		out[i] = p
	}
	return out, nil
}

// steppingClock advances by step on every reading.
type steppingClock struct {
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time                  { c.now = c.now.Add(c.step); return c.now }
func (c *steppingClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }

func named(name string, mutate func(p *corev1.Pod)) *corev1.Pod {
	p := podWith(mutate)
	p.Name, p.Namespace = name, "team"
	return p
}

func privilegedContainer(p *corev1.Pod) {
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: yes()}
}

func TestNamespaceEnforceChange(t *testing.T) {
	hostNet := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	some := &fakePods{pods: []*corev1.Pod{
		named("web-2", privilegedContainer), named("web-1", privilegedContainer), named("plain", nil),
		named("net", hostNet), named("web-3", privilegedContainer),
	}}
	tests := []struct {
		name     string
		old, cur map[string]string
		pods     *fakePods
		want     []string
	}{
		{"baseline set", nil, map[string]string{EnforceLabel: Baseline}, some, []string{
			`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest"`,
			`net: host namespaces`,
			`web-1 (and 2 other pods): privileged`,
		}},
		{"restricted set", nil, map[string]string{EnforceLabel: Restricted, EnforceVersionLabel: "v1.36"},
			&fakePods{pods: []*corev1.Pod{named("a", nil), named("b", hostNet)}}, []string{
				`existing pods in namespace "team" violate the new PodSecurity enforce level "restricted:v1.36"`,
				`a: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile`,
				`b: allowPrivilegeEscalation != false, unrestricted capabilities, host namespaces, runAsNonRoot != true, seccompProfile`,
			}},
		{"no violations", nil, map[string]string{EnforceLabel: Baseline}, &fakePods{pods: []*corev1.Pod{named("plain", nil)}}, nil},
		{"enforce unchanged", map[string]string{EnforceLabel: Baseline}, map[string]string{EnforceLabel: Baseline, "x": "y"}, some, nil},
		{"relaxed", map[string]string{EnforceLabel: Restricted}, map[string]string{EnforceLabel: Baseline}, some, nil},
		{"privileged", map[string]string{EnforceLabel: Baseline, EnforceVersionLabel: "v1.30"}, map[string]string{EnforceLabel: Privileged}, some, nil},
		{"version changed", map[string]string{EnforceLabel: Baseline}, map[string]string{EnforceLabel: Baseline, EnforceVersionLabel: "v1.36"}, some, []string{
			`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:v1.36"`,
			`net: host namespaces`,
			`web-1 (and 2 other pods): privileged`,
		}},
		{"warn and audit labels alone", nil, map[string]string{WarnLabel: Restricted, AuditLabel: Restricted}, some, nil},
		{"list fails", nil, map[string]string{EnforceLabel: Baseline}, &fakePods{err: fmt.Errorf("etcd down")},
			[]string{"failed to list pods while checking new PodSecurity enforce level"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header, ctx := recordWarnings(context.Background())
			err := New(fakeNamespaces{}, WithPods(tt.pods)).Validate(ctx, &admission.Attributes{Operation: admission.Update,
				Resource: nsRes, Name: "team", Object: namespace(tt.cur), OldObject: namespace(tt.old)})
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := warnings(t, header); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	// A create is only checked for its labels: the namespace has no pods.
	header, ctx := recordWarnings(context.Background())
	if err := New(fakeNamespaces{}, WithPods(some)).Validate(ctx, &admission.Attributes{Operation: admission.Create,
		Resource: nsRes, Name: "team", Object: namespace(map[string]string{EnforceLabel: Baseline})}); err != nil || len(header) != 0 {
		t.Errorf("create: error %v, warnings %q; want neither", err, header.Values("Warning"))
	}
}

func TestNamespaceEnforceChangeBounds(t *testing.T) {
	ctrl := func(uid string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			privilegedContainer(p)
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + uid, UID: types.UID(uid), Controller: yes()}}
		}
	}
	// Replicas of one controller go last: the bounded check sees every
	// controller (and the lone pod) before a second replica.
	pods := &fakePods{pods: []*corev1.Pod{
		named("a-1", ctrl("a")), named("a-2", ctrl("a")), named("a-3", ctrl("a")),
		named("b-1", ctrl("b")), named("lone", func(p *corev1.Pod) { p.Spec.HostPID = true }),
	}}
	update := func(p *Plugin, ctx context.Context) []string {
		header, ctx := recordWarnings(ctx)
		err := p.Validate(ctx, &admission.Attributes{Operation: admission.Update, Resource: nsRes, Name: "team",
			Object: namespace(map[string]string{EnforceLabel: Baseline}), OldObject: namespace(nil)})
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return warnings(t, header)
	}

	p := New(fakeNamespaces{}, WithPods(pods))
	p.maxPods = 3
	want := []string{
		`new PodSecurity enforce level only checked against the first 3 of 5 existing pods`,
		`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest"`,
		`a-1 (and 1 other pod): privileged`,
		`lone: host namespaces`,
	}
	if got := update(p, context.Background()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("at most 3 pods:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The clock passes 600ms per reading (one to start, one after each
	// pod): the budget of a second runs out after the second pod.
	p = New(fakeNamespaces{}, WithPods(pods))
	p.clock = &steppingClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: 600 * time.Millisecond}
	want = []string{
		`new PodSecurity enforce level only checked against the first 2 of 5 existing pods`,
		`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest"`,
		`a-1 (and 1 other pod): privileged`,
	}
	if got := update(p, context.Background()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("out of time:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A request with little time left gives the check half of it: 800ms
	// left at the start, so 400ms, over after the third pod (200ms each).
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	p = New(fakeNamespaces{}, WithPods(pods))
	p.clock = &steppingClock{now: deadline.Add(-time.Second), step: 200 * time.Millisecond}
	want = []string{
		`new PodSecurity enforce level only checked against the first 3 of 5 existing pods`,
		`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest"`,
		`a-1 (and 1 other pod): privileged`,
		`lone: host namespaces`,
	}
	if got := update(p, ctx); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("half the request's time:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestWarnings(t *testing.T) {
	deployments := &registry.Resource{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Name: "deployments", Namespaced: true}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}}
	deploy.Spec.Template.Spec = podWith(nil).Spec
	restrictedDetail := `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	tests := []struct {
		name    string
		labels  map[string]string
		res     *registry.Resource
		obj     runtime.Object
		wantErr bool
		want    []string
	}{
		{"pod allowed by enforce, warned by warn", map[string]string{EnforceLabel: Baseline, WarnLabel: Restricted}, pods, podWith(nil), false,
			[]string{`would violate PodSecurity "restricted:latest": ` + restrictedDetail}},
		{"refused pod gets no warning", map[string]string{EnforceLabel: Restricted, WarnLabel: Restricted}, pods, podWith(nil), true, nil},
		{"deployment warned at the enforce level", map[string]string{EnforceLabel: Restricted, EnforceVersionLabel: "v1.36"}, deployments, deploy, false,
			[]string{`would violate PodSecurity "restricted:v1.36": ` + restrictedDetail}},
		{"explicit warn level wins", map[string]string{EnforceLabel: Restricted, WarnLabel: Baseline}, deployments, deploy, false, nil},
		{"unlabeled namespace", nil, deployments, deploy, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header, ctx := recordWarnings(context.Background())
			err := New(ns(tt.labels)).Validate(ctx, &admission.Attributes{Operation: admission.Create, Resource: tt.res, Namespace: "ns", Name: "x", Object: tt.obj})
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			got := warnings(t, header)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
