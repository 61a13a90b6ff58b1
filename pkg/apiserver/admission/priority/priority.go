// Package priority is the Priority admission plugin: a new pod's
// spec.priority and spec.preemptionPolicy come from its PriorityClass (or
// the global default class), and at most one class is the global default.
package priority

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/priorityclass"
)

// Classes reads priority classes. GetPriorityClass answers a NotFound API
// error for a missing class. The classes may be shared with a cache: do not
// modify them.
type Classes interface {
	GetPriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)
	ListPriorityClasses(ctx context.Context) ([]schedulingv1.PriorityClass, error)
}

// Plugin is the Priority admission plugin.
type Plugin struct {
	classes Classes
}

// New returns the plugin reading classes.
func New(classes Classes) *Plugin { return &Plugin{classes: classes} }

// Name implements admission.Mutator and admission.Validator.
func (p *Plugin) Name() string { return "Priority" }

var (
	podsGR    = schema.GroupResource{Resource: "pods"}
	classesGR = schema.GroupResource{Group: schedulingv1.GroupName, Resource: "priorityclasses"}
)

func groupResource(a *admission.Attributes) schema.GroupResource {
	if a.Resource == nil {
		return schema.GroupResource{}
	}
	return a.Resource.GroupVersionResource().GroupResource()
}

// Admit resolves a new pod's priority from its class.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" || groupResource(a) != podsGR {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	switch a.Operation {
	case admission.Update:
		// Resolved once at creation: an update that leaves them out keeps them
		// (validation refuses one that changes them).
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	case admission.Create:
		return p.admitNewPod(ctx, a, pod)
	}
	return nil
}

func (p *Plugin) admitNewPod(ctx context.Context, a *admission.Attributes, pod *corev1.Pod) error {
	var pc *schedulingv1.PriorityClass
	if pod.Spec.PriorityClassName == "" {
		def, err := p.globalDefault(ctx)
		if err != nil {
			return fmt.Errorf("failed to get default priority class: %w", err)
		}
		if def != nil {
			pod.Spec.PriorityClassName = def.Name
		}
		pc = def
	} else {
		var err error
		pc, err = p.classes.GetPriorityClass(ctx, pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return apierrors.NewForbidden(podsGR, a.Name, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return fmt.Errorf("failed to get PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err)
		}
	}
	// Without a class (no default either): priority 0, and preempting.
	var value int32
	policy := corev1.PreemptLowerPriority
	if pc != nil {
		value = pc.Value
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return apierrors.NewForbidden(podsGR, a.Name, fmt.Errorf(
			"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name",
			*pod.Spec.Priority, value))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return apierrors.NewForbidden(podsGR, a.Name, fmt.Errorf(
			"the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name",
			*pod.Spec.PreemptionPolicy, policy))
	}
	pod.Spec.Priority = &value
	pod.Spec.PreemptionPolicy = &policy
	return nil
}

// Validate refuses a second global default class, and deleting a built-in
// class (upstream's REST storage refuses that).
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" || groupResource(a) != classesGR {
		return nil
	}
	if a.Operation == admission.Delete {
		for _, sys := range priorityclass.SystemClasses() {
			if a.Name == sys.Name {
				return apierrors.NewForbidden(classesGR, a.Name, errors.New("this is a system priority class and cannot be deleted"))
			}
		}
		return nil
	}
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	def, err := p.globalDefault(ctx)
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	if def != nil && (a.Operation == admission.Create || def.Name != pc.Name) {
		return apierrors.NewForbidden(classesGR, a.Name, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// globalDefault is the class marked globalDefault, nil when none is; should
// a race have left several, the lowest value wins, as upstream.
func (p *Plugin) globalDefault(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	list, err := p.classes.ListPriorityClasses(ctx)
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for i := range list {
		if list[i].GlobalDefault && (def == nil || list[i].Value < def.Value) {
			def = &list[i]
		}
	}
	return def, nil
}
