package deployment

// Defaulting and validation of the pod template, kept minimal and private
// until the pod registry package exports its own PodSpec defaulting and
// validation; the workload packages (deployment, replicaset, job) each hold
// a copy so that none depends on another.

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// defaultPodTemplate fills what upstream's PodSpec defaulting fills for the
// fields a template usually carries, so that pods created from it and the
// template read back look like upstream's.
func defaultPodTemplate(t *corev1.PodTemplateSpec) {
	spec := &t.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
}

// defaultPullPolicy is Always for an untagged or :latest image (it may move),
// IfNotPresent otherwise, as upstream.
func defaultPullPolicy(image string) corev1.PullPolicy {
	name := image
	if i := strings.LastIndex(name, "@"); i >= 0 {
		return corev1.PullIfNotPresent // pinned by digest
	}
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndex(name, ":")
	if i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// validatePodTemplate checks what a pod made from the template needs at the
// least: labels that are labels, and named containers with images.
func validatePodTemplate(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(t.Labels, fldPath.Child("metadata", "labels"))
	specPath := fldPath.Child("spec")
	if len(t.Spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("containers"), ""))
	}
	names := sets.New[string]()
	allErrs = append(allErrs, validateContainers(t.Spec.InitContainers, names, specPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateContainers(t.Spec.Containers, names, specPath.Child("containers"))...)
	return allErrs
}

func validateContainers(containers []corev1.Container, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range containers {
		idxPath := fldPath.Index(i)
		switch {
		case c.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		case names.Has(c.Name):
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), c.Name))
		default:
			for _, msg := range utilvalidation.IsDNS1123Label(c.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), c.Name, msg))
			}
		}
		names.Insert(c.Name)
		switch {
		case c.Image == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("image"), ""))
		case c.Image != strings.TrimSpace(c.Image):
			allErrs = append(allErrs, field.Invalid(idxPath.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
		for j, p := range c.Ports {
			portPath := idxPath.Child("ports").Index(j)
			for _, msg := range utilvalidation.IsValidPortNum(int(p.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(portPath.Child("containerPort"), p.ContainerPort, msg))
			}
			switch p.Protocol {
			case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
			default:
				allErrs = append(allErrs, field.NotSupported(portPath.Child("protocol"), p.Protocol,
					[]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}))
			}
		}
	}
	return allErrs
}
