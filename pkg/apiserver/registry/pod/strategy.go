// Package pod holds the pod strategy: defaults, validation, immutability,
// status handling, graceful deletion period, selectable fields and the
// table kubectl shows.
package pod

import (
	"context"
	"net"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/api/podqos"
	"github.com/kube-lite/kube-lite/pkg/api/podrestart"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	regvalidation "github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	if pod, ok := obj.(*corev1.Pod); ok {
		Default(pod)
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	pod.Generation = 1
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podqos.Class(pod)}
	// Priority comes from the pod's PriorityClass through admission, which
	// has run by now; a pod without one has priority 0 and, as upstream's
	// priority admission gives it, may preempt lower priorities.
	if pod.Spec.PriorityClassName == "" {
		if pod.Spec.Priority == nil {
			var zero int32
			pod.Spec.Priority = &zero
		}
		if pod.Spec.PreemptionPolicy == nil {
			p := corev1.PreemptLowerPriority
			pod.Spec.PreemptionPolicy = &p
		}
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return registry.WrongType("pod", obj)
	}
	return regvalidation.PodSpec(&pod.Spec, field.NewPath("spec"))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, ok1 := obj.(*corev1.Pod)
	oldPod, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	pod.Status = oldPod.Status
	// Priority and preemption policy are resolved once, at creation; a
	// replacement manifest that leaves them out means "unchanged", not
	// "changed to nothing".
	if pod.Spec.Priority == nil && oldPod.Spec.Priority != nil {
		p := *oldPod.Spec.Priority
		pod.Spec.Priority = &p
	}
	if pod.Spec.PreemptionPolicy == nil && oldPod.Spec.PreemptionPolicy != nil {
		p := *oldPod.Spec.PreemptionPolicy
		pod.Spec.PreemptionPolicy = &p
	}
	pod.Generation = registry.NextGeneration(oldPod.Generation, !apiequality.Semantic.DeepEqual(pod.Spec, oldPod.Spec))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	pod, ok1 := obj.(*corev1.Pod)
	oldPod, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return registry.WrongType("pod", obj)
	}
	return ValidateUpdate(pod, oldPod)
}

// ValidateUpdate enforces what may change in a running pod's spec: images,
// a shorter active deadline, added tolerations, removed scheduling gates.
func ValidateUpdate(pod, old *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := regvalidation.PodSpec(&pod.Spec, specPath)
	if len(pod.Spec.Containers) != len(old.Spec.Containers) {
		return append(errs, field.Forbidden(specPath.Child("containers"), "pod updates may not add or remove containers"))
	}
	if len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return append(errs, field.Forbidden(specPath.Child("initContainers"), "pod updates may not add or remove containers"))
	}
	errs = append(errs, activeDeadlineUpdate(pod.Spec.ActiveDeadlineSeconds, old.Spec.ActiveDeadlineSeconds,
		specPath.Child("activeDeadlineSeconds"))...)
	errs = append(errs, onlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, onlyRemovedGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	// Compare everything else: copy the mutable fields from old into a copy of
	// the new spec, which must then equal the old spec.
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.Tolerations = old.Spec.Tolerations
	munged.SchedulingGates = old.Spec.SchedulingGates
	// A negative grace period (from old clients) may be fixed up to 1.
	if g, og := munged.TerminationGracePeriodSeconds, old.Spec.TerminationGracePeriodSeconds; g != nil && og != nil && *og < 0 && *g == 1 {
		munged.TerminationGracePeriodSeconds = og
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "pod updates may not change fields other than "+
			"`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"+
			"`spec.tolerations` (only additions to existing tolerations),"+
			"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"+
			diff.Diff(old.Spec, *munged)))
	}
	return errs
}

func activeDeadlineUpdate(v, old *int64, fldPath *field.Path) field.ErrorList {
	switch {
	case v == nil && old != nil:
		return field.ErrorList{field.Invalid(fldPath, v, "must not update from a positive integer to nil value")}
	case v != nil && old != nil && *v > *old:
		return field.ErrorList{field.Invalid(fldPath, *v, "must be less than or equal to previous value")}
	}
	return nil
}

// onlyAddedTolerations: every old toleration must still be there, except
// that a NoExecute toleration's tolerationSeconds may change.
func onlyAddedTolerations(tols, old []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, o := range old {
		found := false
		for _, n := range tols {
			o2 := o
			o2.TolerationSeconds = n.TolerationSeconds
			if apiequality.Semantic.DeepEqual(o2, n) {
				found = true
				break
			}
		}
		if !found {
			errs = append(errs, field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds"))
			break
		}
	}
	return errs
}

func onlyRemovedGates(gates, old []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	was := map[string]bool{}
	for _, g := range old {
		was[g.Name] = true
	}
	for _, g := range gates {
		if !was[g.Name] {
			return field.ErrorList{field.Forbidden(fldPath, "only deletion is allowed, but found new scheduling gate '"+g.Name+"'")}
		}
	}
	return nil
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, ok1 := obj.(*corev1.Pod)
	oldPod, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	pod.Spec = oldPod.Spec
	pod.Generation = oldPod.Generation
	pod.DeletionTimestamp = oldPod.DeletionTimestamp
	pod.DeletionGracePeriodSeconds = oldPod.DeletionGracePeriodSeconds
	// Owner references drive garbage collection; a kubelet must not touch them.
	pod.OwnerReferences = oldPod.OwnerReferences
	// QOS class is fixed at creation; a status writer that drops it keeps it.
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = oldPod.Status.QOSClass
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	pod, ok1 := obj.(*corev1.Pod)
	oldPod, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return registry.WrongType("pod", obj)
	}
	return ValidateStatusUpdate(pod, oldPod)
}

// ValidateStatusUpdate checks a status write: a known phase, no restart of
// containers the restart policy keeps dead, a fixed QOS class, valid
// addresses and node names.
func ValidateStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	statusPath := field.NewPath("status")
	var errs field.ErrorList
	st := &pod.Status
	phasePath := statusPath.Child("phase")
	switch st.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, "":
	default:
		errs = append(errs, field.NotSupported(phasePath, st.Phase, []string{
			string(corev1.PodPending), string(corev1.PodRunning), string(corev1.PodSucceeded),
			string(corev1.PodFailed), string(corev1.PodUnknown)}))
	}
	// A container that will not be restarted cannot come back to life; in a
	// pod where a RestartAllContainers rule may restart every container, any
	// may.
	if !podrestart.MayRestartAll(&old.Spec) {
		errs = append(errs, stateTransitions(st.ContainerStatuses, old.Status.ContainerStatuses, old.Spec.Containers, &old.Spec, statusPath.Child("containerStatuses"))...)
		errs = append(errs, stateTransitions(st.InitContainerStatuses, old.Status.InitContainerStatuses, old.Spec.InitContainers, &old.Spec, statusPath.Child("initContainerStatuses"))...)
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(st.QOSClass, old.Status.QOSClass, statusPath.Child("qosClass"))...)
	if st.NominatedNodeName != "" {
		errs = append(errs, regvalidation.Messages(statusPath.Child("nominatedNodeName"), st.NominatedNodeName, validation.IsDNS1123Subdomain(st.NominatedNodeName))...)
	}
	errs = append(errs, ip(st.PodIP, statusPath.Child("podIP"))...)
	errs = append(errs, ip(st.HostIP, statusPath.Child("hostIP"))...)
	for i, p := range st.PodIPs {
		errs = append(errs, ip(p.IP, statusPath.Child("podIPs").Index(i).Child("ip"))...)
	}
	if len(st.PodIPs) > 0 && st.PodIP != "" && st.PodIPs[0].IP != st.PodIP {
		errs = append(errs, field.Invalid(statusPath.Child("podIPs").Index(0).Child("ip"), st.PodIPs[0].IP, "must match `podIP`"))
	}
	for i, c := range st.Conditions {
		cp := statusPath.Child("conditions").Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []string{
				string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown)}))
		}
	}
	for i, cs := range st.ContainerStatuses {
		errs = append(errs, regvalidation.NonnegativeField(int64(cs.RestartCount), statusPath.Child("containerStatuses").Index(i).Child("restartCount"))...)
	}
	for i, cs := range st.InitContainerStatuses {
		errs = append(errs, regvalidation.NonnegativeField(int64(cs.RestartCount), statusPath.Child("initContainerStatuses").Index(i).Child("restartCount"))...)
	}
	return errs
}

// stateTransitions forbids a terminated container to be reported running or
// waiting again unless it would have been restarted (podrestart.AfterExit:
// its own rules and restartPolicy, else the pod's), as upstream's.
// containers are the spec's containers the statuses are of.
func stateTransitions(statuses, old []corev1.ContainerStatus, containers []corev1.Container, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, o := range old {
		if o.State.Terminated == nil {
			continue
		}
		for _, n := range statuses {
			if n.Name != o.Name || n.State.Terminated != nil {
				continue
			}
			// A status of no container in the spec is never restarted.
			if c := containerNamed(containers, o.Name); c == nil || !podrestart.AfterExit(c, spec, o.State.Terminated.ExitCode) {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
			break
		}
	}
	return errs
}

func containerNamed(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func ip(s string, fldPath *field.Path) field.ErrorList {
	if s != "" && net.ParseIP(s) == nil {
		return field.ErrorList{field.Invalid(fldPath, s, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")}
	}
	return nil
}

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

// GracePeriod is how long a deleted pod gets to stop when the client asks
// for no particular period: its terminationGracePeriodSeconds, or 0 when no
// kubelet runs it (unscheduled) or it already finished.
func GracePeriod(pod *corev1.Pod) int64 {
	return GracePeriodFor(pod, nil)
}

// GracePeriodFor is GracePeriod honouring the client's
// DeleteOptions.gracePeriodSeconds (requested, may be nil). Unscheduled and
// finished pods are still deleted at once, as upstream.
func GracePeriodFor(pod *corev1.Pod, requested *int64) int64 {
	if pod.Spec.NodeName == "" || terminal(pod.Status.Phase) {
		return 0
	}
	if requested != nil {
		return *requested
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return 0
}
