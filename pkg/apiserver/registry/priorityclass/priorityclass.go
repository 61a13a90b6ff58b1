// Package priorityclass holds the rules for scheduling.k8s.io/v1
// PriorityClasses and the two classes every cluster has.
package priorityclass

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Upstream's limits: users may go up to a billion; above that live only
// the built-in system classes.
const (
	HighestUserDefinablePriority int32 = 1000000000
	SystemCriticalPriority       int32 = 2 * HighestUserDefinablePriority
	// SystemPrefix marks names reserved for the built-in classes.
	SystemPrefix          = "system-"
	SystemNodeCritical    = SystemPrefix + "node-critical"
	SystemClusterCritical = SystemPrefix + "cluster-critical"
)

// SystemClasses are the classes the apiserver creates at start, as
// upstream's; a fresh copy each call, so callers may change them.
func SystemClasses() []*schedulingv1.PriorityClass {
	class := func(name string, value int32, description string) *schedulingv1.PriorityClass {
		p := corev1.PreemptLowerPriority
		return &schedulingv1.PriorityClass{
			TypeMeta:         metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
			ObjectMeta:       metav1.ObjectMeta{Name: name},
			Value:            value,
			Description:      description,
			PreemptionPolicy: &p,
		}
	}
	return []*schedulingv1.PriorityClass{
		class(SystemNodeCritical, SystemCriticalPriority+1000, "Used for system critical pods that must not be moved from their current node."),
		class(SystemClusterCritical, SystemCriticalPriority, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

// Resource describes priority classes for the generic REST handler.
func Resource(c clock.PassiveClock) *registry.Resource {
	doc := schedulingv1.PriorityClass{}.SwaggerDoc()
	return &registry.Resource{
		GroupVersion: schedulingv1.SchemeGroupVersion,
		Name:         "priorityclasses",
		Singular:     "priorityclass",
		Kind:         "PriorityClass",
		ShortNames:   []string{"pc"},
		New:          func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList:      func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy:     strategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.Column("Value", "integer", 0, doc["value"]),
			tableutil.Column("Global-Default", "boolean", 0, doc["globalDefault"]),
			tableutil.AgeColumn(),
			tableutil.Column("PreemptionPolicy", "string", 0, doc["preemptionPolicy"]),
		}, func(pc *schedulingv1.PriorityClass) []interface{} {
			policy := ""
			if pc.PreemptionPolicy != nil {
				policy = string(*pc.PreemptionPolicy)
			}
			return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, tableutil.Age(pc.CreationTimestamp, c.Now()), policy}
		}),
	}
}

type strategy struct{}

// Default gives a class without a preemption policy upstream's default.
func (strategy) Default(obj runtime.Object) {
	pc, ok := obj.(*schedulingv1.PriorityClass)
	if ok && pc.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &p
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*schedulingv1.PriorityClass).Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*schedulingv1.PriorityClass).Generation = old.(*schedulingv1.PriorityClass).Generation
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*schedulingv1.PriorityClass))
}

// ValidateUpdate checks, as upstream, only that value and preemptionPolicy
// stay: pods copied them at creation.
func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	pc, oldPC := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if pc.Value != oldPC.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	if !apiequality.Semantic.DeepEqual(pc.PreemptionPolicy, oldPC.PreemptionPolicy) {
		errs = append(errs, field.Invalid(field.NewPath("preemptionPolicy"), pc.PreemptionPolicy, "field is immutable"))
	}
	return errs
}

func validate(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, SystemPrefix) {
		if err := knownSystemClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+SystemPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		errs = append(errs, validation.PreemptionPolicy(*pc.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	}
	return errs
}

// knownSystemClass is nil when pc is one of the built-in classes, with its
// value and not the global default (description and metadata may differ).
func knownSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, sys := range SystemClasses() {
		if sys.Name != pc.Name {
			continue
		}
		if sys.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}
