package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// affinity checks node affinity, pod affinity and pod anti-affinity with
// upstream's rules and words: a rule the scheduler cannot read (an
// operator it does not know, an empty topology key) is refused at create
// instead of leaving the pod Pending for no visible reason.
func affinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, nodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, weight(t.Weight, tp.Child("weight"))...)
			errs = append(errs, nodeSelectorTerm(&t.Preference, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, podAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, podAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return errs
}

func weight(w int32, fldPath *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(fldPath, w, "must be in the range 1-100")}
	}
	return nil
}

func nodeSelector(s *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i := range s.NodeSelectorTerms {
		errs = append(errs, nodeSelectorTerm(&s.NodeSelectorTerms[i], termsPath.Index(i))...)
	}
	return errs
}

func nodeSelectorTerm(t *corev1.NodeSelectorTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range t.MatchExpressions {
		p := fldPath.Child("matchExpressions").Index(i)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(r.Key, p.Child("key"))...)
	}
	for i, r := range t.MatchFields {
		p := fldPath.Child("matchFields").Index(i)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		// metadata.name is the one node field a selector may name.
		if r.Key != "metadata.name" {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
			continue
		}
		for j, v := range r.Values {
			errs = append(errs, Messages(p.Child("values").Index(j), v, validation.IsDNS1123Subdomain(v))...)
		}
	}
	return errs
}

func podAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range required {
		errs = append(errs, podAffinityTerm(&required[i], fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i := range preferred {
		p := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, weight(preferred[i].Weight, p.Child("weight"))...)
		errs = append(errs, podAffinityTerm(&preferred[i].PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func podAffinityTerm(t *corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		// Upstream names the list "namespace" here.
		errs = append(errs, Messages(fldPath.Child("namespace"), ns, apimachineryvalidation.ValidateNamespaceName(ns, false))...)
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
}

// topologySpreadConstraints checks each constraint as upstream does; a
// repeated {topologyKey, whenUnsatisfiable} pair is reported at its first
// occurrence.
func topologySpreadConstraints(cs []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable,
				[]string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}))
		}
		for _, later := range cs[i+1:] {
			if later.TopologyKey == c.TopologyKey && later.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"),
					fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		errs = append(errs, inclusionPolicy(c.NodeAffinityPolicy, p.Child("nodeAffinityPolicy"))...)
		errs = append(errs, inclusionPolicy(c.NodeTaintsPolicy, p.Child("nodeTaintsPolicy"))...)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}

func inclusionPolicy(policy *corev1.NodeInclusionPolicy, fldPath *field.Path) field.ErrorList {
	if policy == nil {
		return nil
	}
	switch *policy {
	case corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *policy,
		[]string{string(corev1.NodeInclusionPolicyHonor), string(corev1.NodeInclusionPolicyIgnore)})}
}
