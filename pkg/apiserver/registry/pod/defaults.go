package pod

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTerminationGracePeriodSeconds is upstream's default grace period.
const DefaultTerminationGracePeriodSeconds int64 = 30

// defaultFileMode is 0644, the mode of projected volume files unless set.
const defaultFileMode int32 = 0644

// Default fills a pod's defaults as upstream's defaulting does at decode
// time.
func Default(pod *corev1.Pod) {
	DefaultPodSpec(&pod.Spec)
	if pod.Spec.EnableServiceLinks == nil {
		t := true
		pod.Spec.EnableServiceLinks = &t
	}
	mirrorSingularFields(pod)
	// Only pods, not templates, get requests from limits: a template's
	// containers are defaulted when the pod is created from it.
	for i := range pod.Spec.InitContainers {
		requestsFromLimits(&pod.Spec.InitContainers[i].Resources)
	}
	for i := range pod.Spec.Containers {
		requestsFromLimits(&pod.Spec.Containers[i].Resources)
	}
	if pod.Spec.Resources != nil {
		requestsFromLimits(pod.Spec.Resources)
	}
}

// mirrorSingularFields keeps the old singular fields and their lists in
// step, as upstream's v1 conversion does, so that clients reading either
// (kubectl reads podIPs, older code podIP) see the same value.
func mirrorSingularFields(pod *corev1.Pod) {
	spec, st := &pod.Spec, &pod.Status
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	switch {
	case st.PodIP != "" && len(st.PodIPs) == 0:
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	}
	switch {
	case st.HostIP != "" && len(st.HostIPs) == 0:
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	case st.HostIP == "" && len(st.HostIPs) > 0:
		st.HostIP = st.HostIPs[0].IP
	}
}

// DefaultPodSpec fills the defaults shared by pods and pod templates
// (Deployments, ReplicaSets, Jobs call it for spec.template.spec).
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := DefaultTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
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
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		// With the host's network the container port is the host port.
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

// defaultPullPolicy: a moving tag (latest, or none) is pulled every time,
// a fixed one only when missing.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	_, tag, hasTag := strings.Cut(name, ":")
	if !hasTag || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if (*src == corev1.VolumeSource{}) {
		// A volume with no source is scratch space, as upstream.
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	switch {
	case src.ConfigMap != nil:
		defaultMode(&src.ConfigMap.DefaultMode)
	case src.Secret != nil:
		defaultMode(&src.Secret.DefaultMode)
	case src.DownwardAPI != nil:
		defaultMode(&src.DownwardAPI.DefaultMode)
		for i := range src.DownwardAPI.Items {
			if fr := src.DownwardAPI.Items[i].FieldRef; fr != nil && fr.APIVersion == "" {
				fr.APIVersion = "v1"
			}
		}
	case src.Projected != nil:
		defaultMode(&src.Projected.DefaultMode)
	case src.HostPath != nil:
		if src.HostPath.Type == nil {
			t := corev1.HostPathUnset
			src.HostPath.Type = &t
		}
	}
}

func defaultMode(m **int32) {
	if *m == nil {
		v := defaultFileMode
		*m = &v
	}
}

// requestsFromLimits: a container that only states limits asks for exactly
// that much.
func requestsFromLimits(r *corev1.ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}
