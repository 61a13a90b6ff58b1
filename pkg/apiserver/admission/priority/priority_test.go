package priority

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

type classes []schedulingv1.PriorityClass

func (c classes) GetPriorityClass(_ context.Context, name string) (*schedulingv1.PriorityClass, error) {
	for i := range c {
		if c[i].Name == name {
			return &c[i], nil
		}
	}
	return nil, apierrors.NewNotFound(classesGR, name)
}

func (c classes) ListPriorityClasses(context.Context) ([]schedulingv1.PriorityClass, error) {
	return c, nil
}

var (
	podsResource    = &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "pods"}
	classesResource = &registry.Resource{GroupVersion: schedulingv1.SchemeGroupVersion, Name: "priorityclasses"}
)

func class(name string, value int32, def bool, policy corev1.PreemptionPolicy) schedulingv1.PriorityClass {
	return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: def, PreemptionPolicy: &policy}
}

func pod(class string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{PriorityClassName: class}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestAdmitPod(t *testing.T) {
	cs := classes{class("polite", 50, false, corev1.PreemptNever), class("everyone", 7, true, corev1.PreemptLowerPriority)}
	never, lower := corev1.PreemptNever, corev1.PreemptLowerPriority
	tests := []struct {
		name       string
		classes    classes
		pod        *corev1.Pod
		wantClass  string
		wantPrio   int32
		wantPolicy corev1.PreemptionPolicy
		wantErr    string
	}{
		{name: "named class", classes: cs, pod: pod("polite"), wantClass: "polite", wantPrio: 50, wantPolicy: never},
		{name: "global default", classes: cs, pod: pod(""), wantClass: "everyone", wantPrio: 7, wantPolicy: lower},
		{name: "no default", pod: pod(""), wantPrio: 0, wantPolicy: lower},
		{name: "matching own priority", classes: cs, pod: pod("polite", func(p *corev1.Pod) { v := int32(50); p.Spec.Priority = &v }),
			wantClass: "polite", wantPrio: 50, wantPolicy: never},
		{name: "unknown class", classes: cs, pod: pod("nope"), wantErr: `pods "p" is forbidden: no PriorityClass with name nope was found`},
		{name: "own priority without a class", pod: pod("", func(p *corev1.Pod) { v := int32(3); p.Spec.Priority = &v }),
			wantErr: "the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"},
		{name: "own preemption policy", classes: cs, pod: pod("polite", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = &lower }),
			wantErr: "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: admission.Create, Resource: podsResource, Name: "p", Object: tt.pod}
			err := New(tt.classes).Admit(context.Background(), a)
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a 403 with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := tt.pod.Spec
			if s.PriorityClassName != tt.wantClass || s.Priority == nil || *s.Priority != tt.wantPrio || s.PreemptionPolicy == nil || *s.PreemptionPolicy != tt.wantPolicy {
				t.Errorf("class %q priority %v policy %v", s.PriorityClassName, s.Priority, s.PreemptionPolicy)
			}
		})
	}
}

func TestUpdateKeepsPriority(t *testing.T) {
	old := pod("polite", func(p *corev1.Pod) {
		v, pol := int32(50), corev1.PreemptNever
		p.Spec.Priority, p.Spec.PreemptionPolicy = &v, &pol
	})
	cur := pod("polite")
	a := &admission.Attributes{Operation: admission.Update, Resource: podsResource, Name: "p", Object: cur, OldObject: old}
	if err := New(classes{}).Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if cur.Spec.Priority == nil || *cur.Spec.Priority != 50 || cur.Spec.PreemptionPolicy == nil || *cur.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("update lost priority %v / policy %v", cur.Spec.Priority, cur.Spec.PreemptionPolicy)
	}
}

func TestOneGlobalDefault(t *testing.T) {
	cs := classes{class("everyone", 7, true, corev1.PreemptLowerPriority), class("other", 1, false, corev1.PreemptLowerPriority)}
	validate := func(op admission.Operation, pc schedulingv1.PriorityClass) error {
		return New(cs).Validate(context.Background(), &admission.Attributes{Operation: op, Resource: classesResource, Name: pc.Name, Object: runtime.Object(&pc)})
	}
	err := validate(admission.Create, class("second", 9, true, corev1.PreemptLowerPriority))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PriorityClass everyone is already marked as default. Only one default can exist") {
		t.Errorf("second default: %v", err)
	}
	if err := validate(admission.Update, class("other", 1, true, corev1.PreemptLowerPriority)); !apierrors.IsForbidden(err) {
		t.Errorf("marking another class default: %v", err)
	}
	if err := validate(admission.Update, class("everyone", 7, true, corev1.PreemptLowerPriority)); err != nil {
		t.Errorf("updating the default itself: %v", err)
	}
}
