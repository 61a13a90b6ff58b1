package podsecurity

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
		{"privileged in unlabeled namespace", ns(nil), podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: yes()}
		}), ""},
		{"privileged", baseline, podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: yes()}
		}), `pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`},
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

func TestNamespaceLabels(t *testing.T) {
	nsRes := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "namespaces"}
	tests := []struct {
		value   string
		wantErr bool
	}{{"baseline", false}, {"restricted", false}, {"privileged", false}, {"strict", true}}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{EnforceLabel: tt.value}}}
			err := New(fakeNamespaces{}).Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: nsRes, Name: "team", Object: obj})
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr && !apierrors.IsForbidden(err) {
				t.Fatalf("error %v, want Forbidden", err)
			}
		})
	}

	// A stored namespace with an unknown level is held to restricted.
	pod := podWith(nil)
	err := New(ns(map[string]string{EnforceLabel: "strict"})).Validate(context.Background(),
		&admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Name: "x", Object: pod})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
		t.Fatalf("error %v, want a restricted refusal", err)
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
			header := http.Header{}
			info := &request.Info{}
			info.WarnTo(header)
			ctx := request.WithInfo(context.Background(), info)
			err := New(ns(tt.labels)).Validate(ctx, &admission.Attributes{Operation: admission.Create, Resource: tt.res, Namespace: "ns", Name: "x", Object: tt.obj})
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			var got []string
			for _, v := range header.Values("Warning") {
				msg, err := strconv.Unquote(strings.TrimPrefix(v, "299 - "))
				if err != nil {
					t.Fatalf("Warning header %q: %v", v, err)
				}
				got = append(got, msg)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
