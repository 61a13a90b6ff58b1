package limitranger

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

type fakeRanges []corev1.LimitRange

func (f fakeRanges) ListLimitRanges(_ context.Context, ns string) ([]corev1.LimitRange, error) {
	var out []corev1.LimitRange
	for _, lr := range f {
		if lr.Namespace == ns {
			out = append(out, lr)
		}
	}
	return out, nil
}

var pods = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Namespaced: true}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func ranges(items ...corev1.LimitRangeItem) fakeRanges {
	lr := corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: items}}
	lr.Namespace, lr.Name = "ns", "limits"
	return fakeRanges{lr}
}

func podWith(res ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace = "p", "ns"
	for i, r := range res {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: "busybox", Resources: r})
	}
	return p
}

func TestAdmitDefaults(t *testing.T) {
	tests := []struct {
		name             string
		ranges           fakeRanges
		in               corev1.ResourceRequirements
		wantReq, wantLim corev1.ResourceList
		wantAnnotation   bool
	}{
		{"defaults filled", ranges(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "64Mi")}),
			corev1.ResourceRequirements{}, rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "500m", "memory", "256Mi"), true},
		{"own values kept", ranges(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "500m"), DefaultRequest: rl("cpu", "100m")}),
			corev1.ResourceRequirements{Requests: rl("cpu", "200m"), Limits: rl("cpu", "1")}, rl("cpu", "200m"), rl("cpu", "1"), false},
		{"request defaults to default limit", ranges(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("memory", "128Mi")}),
			corev1.ResourceRequirements{}, rl("memory", "128Mi"), rl("memory", "128Mi"), true},
		{"limit defaults to max", ranges(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "2")}),
			corev1.ResourceRequirements{}, rl("cpu", "2"), rl("cpu", "2"), true},
		{"pod items give no defaults", ranges(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "2")}),
			corev1.ResourceRequirements{}, nil, nil, false},
		{"no ranges", nil, corev1.ResourceRequirements{}, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podWith(tt.in)
			a := &admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Name: "p", Object: pod}
			if err := New(tt.ranges).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			got := pod.Spec.Containers[0].Resources
			if !equal(got.Requests, tt.wantReq) || !equal(got.Limits, tt.wantLim) {
				t.Errorf("resources %v / %v, want %v / %v", got.Requests, got.Limits, tt.wantReq, tt.wantLim)
			}
			if _, ok := pod.Annotations[AnnotationKey]; ok != tt.wantAnnotation {
				t.Errorf("annotation present %v, want %v (%v)", ok, tt.wantAnnotation, pod.Annotations)
			}
		})
	}
}

func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestValidateBounds(t *testing.T) {
	ctr := func(min, max, ratio corev1.ResourceList) fakeRanges {
		return ranges(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: min, Max: max, MaxLimitRequestRatio: ratio})
	}
	tests := []struct {
		name    string
		ranges  fakeRanges
		pod     *corev1.Pod
		wantErr string
	}{
		{"within", ctr(rl("cpu", "100m"), rl("cpu", "1"), nil), podWith(corev1.ResourceRequirements{Requests: rl("cpu", "200m"), Limits: rl("cpu", "500m")}), ""},
		{"below min", ctr(rl("cpu", "100m"), nil, nil), podWith(corev1.ResourceRequirements{Requests: rl("cpu", "50m")}),
			`pods "p" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`},
		{"above max", ctr(nil, rl("memory", "1Gi"), nil), podWith(corev1.ResourceRequirements{Limits: rl("memory", "2Gi")}),
			`maximum memory usage per Container is 1Gi, but limit is 2Gi`},
		{"above max in request and limit: the limit only, as upstream", ctr(nil, rl("memory", "1Gi"), nil),
			podWith(corev1.ResourceRequirements{Requests: rl("memory", "2Gi"), Limits: rl("memory", "2Gi")}),
			`pods "p" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi`},
		{"below min in request and limit: the request only", ctr(rl("cpu", "100m"), nil, nil),
			podWith(corev1.ResourceRequirements{Requests: rl("cpu", "50m"), Limits: rl("cpu", "50m")}),
			`pods "p" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`},
		{"no limit under max", ctr(nil, rl("memory", "1Gi"), nil), podWith(corev1.ResourceRequirements{}),
			`maximum memory usage per Container is 1Gi.  No limit is specified`},
		{"ratio exceeded", ctr(nil, nil, rl("cpu", "2")), podWith(corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "500m")}),
			`cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000`},
		{"ratio kept", ctr(nil, nil, rl("cpu", "2")), podWith(corev1.ResourceRequirements{Requests: rl("cpu", "250m"), Limits: rl("cpu", "500m")}), ""},
		// Upstream looks at the request first and words the missing limit so.
		{"ratio without a limit", ctr(nil, nil, rl("memory", "2")), podWith(corev1.ResourceRequirements{Requests: rl("memory", "1Mi")}),
			`memory max limit to request ratio per Container is 2, but no limit is specified or limit is 0`},
		{"ratio without either", ctr(nil, nil, rl("memory", "2")), podWith(corev1.ResourceRequirements{}),
			`memory max limit to request ratio per Container is 2, but no request is specified or request is 0`},
		{"pod max over the sum", ranges(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")}),
			podWith(corev1.ResourceRequirements{Limits: rl("cpu", "600m")}, corev1.ResourceRequirements{Limits: rl("cpu", "600m")}),
			`maximum cpu usage per Pod is 1, but limit is 1200m`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Name: "p", Object: tt.pod}
			err := New(tt.ranges).Validate(context.Background(), a)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want Forbidden containing %q", err, tt.wantErr)
			}
			if strings.HasPrefix(tt.wantErr, "pods ") && err.Error() != tt.wantErr {
				t.Fatalf("error %q, want exactly %q", err, tt.wantErr)
			}
		})
	}
}
