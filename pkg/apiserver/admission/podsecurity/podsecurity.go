// Package podsecurity enforces the Pod Security Standards a namespace asks
// for with its pod-security.kubernetes.io/enforce label: baseline (no
// privileged containers, host namespaces, hostPath volumes, host ports,
// extra capabilities, ...) or restricted (baseline plus hardening). Pods are
// checked when created (refused at the enforce level, warned about at the
// warn one, which a stricter enforce level raises when unset); workloads'
// pod templates are only warned about. Messages have upstream's shape.
package podsecurity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// Namespace labels, as upstream.
const (
	EnforceLabel        = "pod-security.kubernetes.io/enforce"
	EnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	WarnLabel           = "pod-security.kubernetes.io/warn"
	WarnVersionLabel    = "pod-security.kubernetes.io/warn-version"
)

// Levels.
const (
	Privileged = "privileged"
	Baseline   = "baseline"
	Restricted = "restricted"
)

// NamespaceGetter reads a namespace (for its labels). The namespace may be
// shared with other readers: do not modify it.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// Plugin is the PodSecurity admission plugin.
type Plugin struct{ namespaces NamespaceGetter }

// New returns the plugin.
func New(namespaces NamespaceGetter) *Plugin { return &Plugin{namespaces: namespaces} }

// Name implements admission.Validator.
func (p *Plugin) Name() string { return "PodSecurity" }

// Validate implements admission.Validator.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource == nil || a.Subresource != "" {
		return nil
	}
	if a.Resource.GroupVersion.Group == "" && a.Resource.Name == "namespaces" && (a.Operation == admission.Create || a.Operation == admission.Update) {
		return checkLabels(a)
	}
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	pod, isPod := a.Object.(*corev1.Pod)
	if isPod && a.Operation != admission.Create {
		return nil
	}
	var meta *metav1.ObjectMeta
	var spec *corev1.PodSpec
	if isPod {
		meta, spec = &pod.ObjectMeta, &pod.Spec
	} else if tmpl := podTemplate(a.Object); tmpl != nil {
		meta, spec = &tmpl.ObjectMeta, &tmpl.Spec
	} else {
		return nil
	}
	ns, err := p.namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // NamespaceLifecycle refuses these
		}
		return fmt.Errorf("error reading namespace %s: %w", a.Namespace, err)
	}
	enforce, enforceSet := levelOf(ns.Labels, EnforceLabel, EnforceVersionLabel)
	warn, warnSet := levelOf(ns.Labels, WarnLabel, WarnVersionLabel)
	// An unset warn level follows a stricter enforce one, as upstream:
	// workloads then hear at creation that their pods will be refused.
	if !warnSet && enforceSet && rank(enforce.level) > rank(warn.level) {
		warn.level = enforce.level
		if _, ok := ns.Labels[WarnVersionLabel]; !ok {
			warn.version = enforce.version
		}
	}
	if isPod && enforce.level != Privileged {
		if violations := Check(enforce.level, meta, spec); len(violations) > 0 {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.Name,
				fmt.Errorf("violates PodSecurity %q: %s", enforce.String(), strings.Join(violations, ", ")))
		}
	}
	// Workloads are never refused, only warned about, as upstream. A pod
	// that passed enforce at the warn level (the usual case: warn follows
	// enforce) has nothing to be warned about.
	if warn.level != Privileged && !(isPod && warn.level == enforce.level) {
		if violations := Check(warn.level, meta, spec); len(violations) > 0 {
			admission.Warn(ctx, fmt.Sprintf("would violate PodSecurity %q: %s", warn.String(), strings.Join(violations, ", ")))
		}
	}
	return nil
}

// levelVersion is one mode's level and version.
type levelVersion struct{ level, version string }

func (l levelVersion) String() string { return l.level + ":" + l.version }

// levelOf reads a mode's labels; set reports whether its level label names
// a level. An unknown level fails closed (restricted).
func levelOf(labels map[string]string, levelLabel, versionLabel string) (lv levelVersion, set bool) {
	lv = levelVersion{Privileged, labels[versionLabel]}
	if lv.version == "" {
		lv.version = "latest"
	}
	v, ok := labels[levelLabel]
	switch {
	case !ok:
		return lv, false
	case v == Privileged || v == Baseline || v == Restricted:
		lv.level = v
	default:
		// A label written before it was checked fails closed.
		lv.level = Restricted
	}
	return lv, true
}

func rank(level string) int {
	switch level {
	case Baseline:
		return 1
	case Restricted:
		return 2
	}
	return 0
}

// podTemplate is the pod template of a workload object, as upstream's
// PodSecurity reads them.
func podTemplate(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *corev1.ReplicationController:
		return o.Spec.Template
	case *corev1.PodTemplate:
		return &o.Template
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	}
	return nil
}

// checkLabels refuses namespaces whose enforce label names no level.
func checkLabels(a *admission.Attributes) error {
	ns, ok := a.Object.(*corev1.Namespace)
	if !ok {
		return nil
	}
	v, set := ns.Labels[EnforceLabel]
	if !set || v == Privileged || v == Baseline || v == Restricted {
		return nil
	}
	if old, ok := a.OldObject.(*corev1.Namespace); ok && old.Labels[EnforceLabel] == v {
		return nil // unchanged: updates by controllers must go through
	}
	return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, a.Name,
		fmt.Errorf("invalid value for label %s: %q (must be one of %s, %s, %s)", EnforceLabel, v, Privileged, Baseline, Restricted))
}

// container is one container of any kind with its field path.
type container struct {
	name string
	sc   *corev1.SecurityContext
	c    *corev1.Container
}

func containersOf(spec *corev1.PodSpec) []container {
	var out []container
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		out = append(out, container{c.Name, c.SecurityContext, c})
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		out = append(out, container{c.Name, c.SecurityContext, c})
	}
	for i := range spec.EphemeralContainers {
		c := (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		out = append(out, container{c.Name, c.SecurityContext, c})
	}
	return out
}

// Check returns the violations of level by the pod, each as upstream's
// "reason (detail)", in upstream's check order.
func Check(level string, meta interface{ GetAnnotations() map[string]string }, spec *corev1.PodSpec) []string {
	checks := baselineChecks
	if level == Restricted {
		checks = allChecks
	}
	var out []string
	for _, c := range checks {
		if reason, detail := c(meta.GetAnnotations(), spec); reason != "" {
			out = append(out, reason+" ("+detail+")")
		}
	}
	return out
}

type check func(annotations map[string]string, spec *corev1.PodSpec) (reason, detail string)

// Sorted by upstream's check IDs, which fixes the order of the messages.
var (
	baselineChecks = []check{appArmor, capabilitiesBaseline, hostNamespaces, hostPathVolumes, hostPorts,
		privileged, procMount, seLinux, seccompBaseline, sysctls, windowsHostProcess}
	allChecks = []check{allowPrivilegeEscalation, appArmor, capabilitiesBaseline, capabilitiesRestricted,
		hostNamespaces, hostPathVolumes, hostPorts, privileged, procMount, restrictedVolumes, runAsNonRoot,
		runAsUser, seLinux, seccompBaseline, seccompRestricted, sysctls, windowsHostProcess}
)

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// badContainers names the containers for which bad holds.
func badContainers(spec *corev1.PodSpec, bad func(container) bool) []string {
	var names []string
	for _, c := range containersOf(spec) {
		if bad(c) {
			names = append(names, c.name)
		}
	}
	return names
}

func containersMust(names []string, what string) string {
	return fmt.Sprintf("%s %s %s", plural(len(names), "container", "containers"), quoted(names), what)
}

func privileged(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	names := badContainers(spec, func(c container) bool {
		return c.sc != nil && c.sc.Privileged != nil && *c.sc.Privileged
	})
	if len(names) == 0 {
		return "", ""
	}
	return "privileged", containersMust(names, "must not set securityContext.privileged=true")
}

func hostNamespaces(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var set []string
	if spec.HostNetwork {
		set = append(set, "hostNetwork=true")
	}
	if spec.HostPID {
		set = append(set, "hostPID=true")
	}
	if spec.HostIPC {
		set = append(set, "hostIPC=true")
	}
	if len(set) == 0 {
		return "", ""
	}
	return "host namespaces", strings.Join(set, ", ")
}

func hostPathVolumes(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var names []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	return "hostPath volumes", plural(len(names), "volume", "volumes") + " " + quoted(names)
}

func hostPorts(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var names, ports []string
	for _, c := range containersOf(spec) {
		bad := false
		for _, p := range c.c.Ports {
			if p.HostPort != 0 {
				bad = true
				ports = append(ports, fmt.Sprint(p.HostPort))
			}
		}
		if bad {
			names = append(names, c.name)
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	return "hostPort", fmt.Sprintf("%s %s %s %s", plural(len(names), "container", "containers"), quoted(names),
		plural(len(ports), "uses hostPort", "use hostPorts"), strings.Join(ports, ", "))
}

// baselineCapabilities may be added at the baseline level (docker's defaults).
var baselineCapabilities = map[corev1.Capability]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true, "KILL": true,
	"MKNOD": true, "NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true,
	"SYS_CHROOT": true,
}

func addedCapabilities(spec *corev1.PodSpec, allowed func(corev1.Capability) bool) (names, caps []string) {
	seen := map[string]bool{}
	for _, c := range containersOf(spec) {
		if c.sc == nil || c.sc.Capabilities == nil {
			continue
		}
		bad := false
		for _, cp := range c.sc.Capabilities.Add {
			if allowed(cp) {
				continue
			}
			bad = true
			if !seen[string(cp)] {
				seen[string(cp)] = true
				caps = append(caps, string(cp))
			}
		}
		if bad {
			names = append(names, c.name)
		}
	}
	return names, caps
}

func capabilitiesBaseline(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	names, caps := addedCapabilities(spec, func(c corev1.Capability) bool { return baselineCapabilities[c] })
	if len(names) == 0 {
		return "", ""
	}
	return "non-default capabilities", containersMust(names, "must not include "+quoted(caps)+" in securityContext.capabilities.add")
}

func capabilitiesRestricted(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var notDropped []string
	for _, c := range containersOf(spec) {
		dropsAll := false
		if c.sc != nil && c.sc.Capabilities != nil {
			for _, d := range c.sc.Capabilities.Drop {
				if d == "ALL" {
					dropsAll = true
				}
			}
		}
		if !dropsAll {
			notDropped = append(notDropped, c.name)
		}
	}
	names, caps := addedCapabilities(spec, func(c corev1.Capability) bool { return c == "NET_BIND_SERVICE" })
	var details []string
	if len(notDropped) > 0 {
		details = append(details, containersMust(notDropped, `must set securityContext.capabilities.drop=["ALL"]`))
	}
	if len(names) > 0 {
		details = append(details, containersMust(names, "must not include "+quoted(caps)+" in securityContext.capabilities.add"))
	}
	if len(details) == 0 {
		return "", ""
	}
	return "unrestricted capabilities", strings.Join(details, "; ")
}

func procMount(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var names, kinds []string
	for _, c := range containersOf(spec) {
		if c.sc != nil && c.sc.ProcMount != nil && *c.sc.ProcMount != corev1.DefaultProcMount {
			names = append(names, c.name)
			kinds = append(kinds, string(*c.sc.ProcMount))
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	return "procMount", containersMust(names, "must not set securityContext.procMount to "+quoted(kinds))
}

func appArmor(annotations map[string]string, spec *corev1.PodSpec) (string, string) {
	var bad []string
	forbidden := func(p *corev1.AppArmorProfile) bool {
		return p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined
	}
	if spec.SecurityContext != nil && forbidden(spec.SecurityContext.AppArmorProfile) {
		bad = append(bad, `pod must not set securityContext.appArmorProfile.type to "Unconfined"`)
	}
	names := badContainers(spec, func(c container) bool { return c.sc != nil && forbidden(c.sc.AppArmorProfile) })
	if len(names) > 0 {
		bad = append(bad, containersMust(names, `must not set securityContext.appArmorProfile.type to "Unconfined"`))
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := annotations[k]
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			bad = append(bad, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(bad) == 0 {
		return "", ""
	}
	return "forbidden AppArmor profile", strings.Join(bad, ", ")
}

var allowedSELinuxTypes = map[string]bool{"": true, "container_t": true, "container_init_t": true, "container_kvm_t": true, "container_engine_t": true}

func seLinux(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var problems []string
	bad := func(o *corev1.SELinuxOptions) bool {
		return o != nil && (!allowedSELinuxTypes[o.Type] || o.User != "" || o.Role != "")
	}
	if spec.SecurityContext != nil && bad(spec.SecurityContext.SELinuxOptions) {
		problems = append(problems, "pod")
	}
	names := badContainers(spec, func(c container) bool { return c.sc != nil && bad(c.sc.SELinuxOptions) })
	if len(names) > 0 {
		problems = append(problems, plural(len(names), "container", "containers")+" "+quoted(names))
	}
	if len(problems) == 0 {
		return "", ""
	}
	return "seLinuxOptions", strings.Join(problems, " and ") + " set forbidden securityContext.seLinuxOptions"
}

func seccompBaseline(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	unconfined := func(p *corev1.SeccompProfile) bool { return p != nil && p.Type == corev1.SeccompProfileTypeUnconfined }
	var bad []string
	if spec.SecurityContext != nil && unconfined(spec.SecurityContext.SeccompProfile) {
		bad = append(bad, `pod must not set securityContext.seccompProfile.type to "Unconfined"`)
	}
	names := badContainers(spec, func(c container) bool { return c.sc != nil && unconfined(c.sc.SeccompProfile) })
	if len(names) > 0 {
		bad = append(bad, containersMust(names, `must not set securityContext.seccompProfile.type to "Unconfined"`))
	}
	if len(bad) == 0 {
		return "", ""
	}
	return "seccompProfile", strings.Join(bad, "; ")
}

// safeSysctls may be set at the baseline level.
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced": true, "net.ipv4.ip_local_port_range": true, "net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.tcp_syncookies": true, "net.ipv4.ping_group_range": true, "net.ipv4.ip_local_reserved_ports": true,
	"net.ipv4.tcp_keepalive_time": true, "net.ipv4.tcp_fin_timeout": true, "net.ipv4.tcp_keepalive_intvl": true,
	"net.ipv4.tcp_keepalive_probes": true, "net.ipv4.tcp_rmem": true, "net.ipv4.tcp_wmem": true,
}

func sysctls(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	if spec.SecurityContext == nil {
		return "", ""
	}
	var bad []string
	for _, s := range spec.SecurityContext.Sysctls {
		if !safeSysctls[s.Name] {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) == 0 {
		return "", ""
	}
	return "forbidden sysctls", strings.Join(bad, ", ")
}

func windowsHostProcess(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	hp := func(sc *corev1.SecurityContext) bool {
		return sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess
	}
	podHP := spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil &&
		spec.SecurityContext.WindowsOptions.HostProcess != nil && *spec.SecurityContext.WindowsOptions.HostProcess
	names := badContainers(spec, func(c container) bool { return hp(c.sc) })
	if !podHP && len(names) == 0 {
		return "", ""
	}
	return "hostProcess", "pod or containers must not set securityContext.windowsOptions.hostProcess=true"
}

func allowPrivilegeEscalation(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	names := badContainers(spec, func(c container) bool {
		return c.sc == nil || c.sc.AllowPrivilegeEscalation == nil || *c.sc.AllowPrivilegeEscalation
	})
	if len(names) == 0 {
		return "", ""
	}
	return "allowPrivilegeEscalation != false", containersMust(names, "must set securityContext.allowPrivilegeEscalation=false")
}

func restrictedVolumes(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	var names []string
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		if s.ConfigMap == nil && s.CSI == nil && s.DownwardAPI == nil && s.EmptyDir == nil && s.Ephemeral == nil &&
			s.PersistentVolumeClaim == nil && s.Projected == nil && s.Secret == nil && s.Image == nil {
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	return "restricted volume types", plural(len(names), "volume", "volumes") + " " + quoted(names) + " use restricted volume types"
}

func runAsNonRoot(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	podSet := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil
	if podSet && !*spec.SecurityContext.RunAsNonRoot {
		return "runAsNonRoot != true", "pod must not set securityContext.runAsNonRoot=false"
	}
	names := badContainers(spec, func(c container) bool {
		if c.sc != nil && c.sc.RunAsNonRoot != nil {
			return !*c.sc.RunAsNonRoot
		}
		return !podSet
	})
	if len(names) == 0 {
		return "", ""
	}
	return "runAsNonRoot != true", "pod or " + containersMust(names, "must set securityContext.runAsNonRoot=true")
}

func runAsUser(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	if spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil && *spec.SecurityContext.RunAsUser == 0 {
		return "runAsUser=0", "pod must not set runAsUser=0"
	}
	names := badContainers(spec, func(c container) bool { return c.sc != nil && c.sc.RunAsUser != nil && *c.sc.RunAsUser == 0 })
	if len(names) == 0 {
		return "", ""
	}
	return "runAsUser=0", containersMust(names, "must not set runAsUser=0")
}

func seccompRestricted(_ map[string]string, spec *corev1.PodSpec) (string, string) {
	ok := func(p *corev1.SeccompProfile) bool {
		return p != nil && (p.Type == corev1.SeccompProfileTypeRuntimeDefault || p.Type == corev1.SeccompProfileTypeLocalhost)
	}
	podOK := spec.SecurityContext != nil && ok(spec.SecurityContext.SeccompProfile)
	names := badContainers(spec, func(c container) bool {
		if c.sc != nil && c.sc.SeccompProfile != nil {
			return !ok(c.sc.SeccompProfile)
		}
		return !podOK
	})
	if len(names) == 0 {
		return "", ""
	}
	return "seccompProfile", "pod or " + containersMust(names, `must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`)
}
