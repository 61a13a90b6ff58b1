// Package podsecurity enforces the Pod Security Standards a namespace asks
// for with its pod-security.kubernetes.io/enforce label: baseline (no
// privileged containers, host namespaces, hostPath volumes, host ports,
// extra capabilities, ...) or restricted (baseline plus hardening). Pods are
// checked when created, and when an update changes what the checks read
// (refused at the enforce level, warned about at the warn one, which a
// stricter enforce level raises when unset); workloads' pod templates are
// only warned about. Messages have upstream's shape.
//
// Namespaces' pod-security labels are checked as upstream checks them: a
// create or an update that sets a bad value is refused with 422 Invalid, and
// an update that tightens the enforce level warns about the existing pods
// the new level would refuse (within upstream's limits of 3000 pods and one
// second).
//
// The audit and audit-version labels are accepted and checked, but change
// nothing: upstream records audit annotations in its audit log, and
// kube-lite keeps none. An AdmissionConfiguration (config.go) may set the
// levels of namespaces without labels, and exempt users, runtime classes
// and namespaces; by default every namespace is privileged and nothing is
// exempt, as upstream.
package podsecurity

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// Namespace labels, as upstream.
const (
	EnforceLabel        = "pod-security.kubernetes.io/enforce"
	EnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	AuditLabel          = "pod-security.kubernetes.io/audit"
	AuditVersionLabel   = "pod-security.kubernetes.io/audit-version"
	WarnLabel           = "pod-security.kubernetes.io/warn"
	WarnVersionLabel    = "pod-security.kubernetes.io/warn-version"
)

// Levels.
const (
	Privileged = "privileged"
	Baseline   = "baseline"
	Restricted = "restricted"
)

// Upstream's bounds on the pods checked when a namespace's enforce level
// tightens: the request must not hang on a namespace with many pods.
const (
	maxPodsToCheck  = 3000
	podCheckTimeout = time.Second
)

// NamespaceGetter reads a namespace (for its labels). The namespace may be
// shared with other readers: do not modify it.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// Objects lists a resource's objects in a namespace; the plugin lists pods
// with it.
type Objects interface {
	ListObjects(ctx context.Context, gr schema.GroupResource, namespace string) ([]runtime.Object, error)
}

// Plugin is the PodSecurity admission plugin.
type Plugin struct {
	namespaces NamespaceGetter
	// pods is nil when the plugin cannot list pods: a tightened enforce
	// level then warns about nothing.
	pods Objects
	// defaults are the levels of modes a namespace does not label.
	defaults policy
	exempt   Exemptions
	clock    clock.PassiveClock
	maxPods  int
	timeout  time.Duration
}

// Option configures the plugin.
type Option func(*Plugin)

// WithPods lets the plugin list a namespace's pods, to warn about those a
// namespace's new enforce level would refuse.
func WithPods(pods Objects) Option { return func(p *Plugin) { p.pods = pods } }

// New returns the plugin.
func New(namespaces NamespaceGetter, opts ...Option) *Plugin {
	latest := levelVersion{Privileged, "latest"}
	p := &Plugin{namespaces: namespaces, defaults: policy{latest, latest, latest}, clock: clock.RealClock{}, maxPods: maxPodsToCheck, timeout: podCheckTimeout}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name implements admission.Validator.
func (p *Plugin) Name() string { return "PodSecurity" }

var podsGR = schema.GroupResource{Resource: "pods"}

// ignoredPodSubresources change nothing the checks read, as upstream's list;
// any other pod subresource carrying a pod is checked.
var ignoredPodSubresources = map[string]bool{
	"exec": true, "attach": true, "binding": true, "eviction": true, "log": true,
	"portforward": true, "proxy": true, "status": true,
}

// Validate implements admission.Validator.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource == nil || (a.Operation != admission.Create && a.Operation != admission.Update) {
		return nil
	}
	if a.Resource.GroupVersion.Group == "" {
		switch a.Resource.Name {
		case "namespaces":
			return p.validateNamespace(ctx, a)
		case "pods":
			return p.validatePod(ctx, a)
		}
	}
	if a.Subresource != "" {
		return nil
	}
	tmpl := podTemplate(a.Object)
	if tmpl == nil {
		return nil
	}
	return p.admitPod(ctx, a, &tmpl.ObjectMeta, &tmpl.Spec, false)
}

func (p *Plugin) validatePod(ctx context.Context, a *admission.Attributes) error {
	if ignoredPodSubresources[a.Subresource] {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if old, ok := a.OldObject.(*corev1.Pod); ok && a.Operation == admission.Update && !significantUpdate(pod, old) {
		// Labels, annotations, tolerations, a deadline: nothing the checks
		// read. Upstream lets these through even in a namespace whose level
		// the pod no longer meets, so that controllers can keep working.
		return nil
	}
	return p.admitPod(ctx, a, &pod.ObjectMeta, &pod.Spec, true)
}

// significantUpdate reports whether an update changes what the checks read,
// as upstream decides it: validation leaves only images (and, for old
// clusters, the seccomp annotations) mutable in the fields they read.
func significantUpdate(pod, old *corev1.Pod) bool {
	if pod.Annotations[corev1.SeccompPodAnnotationKey] != old.Annotations[corev1.SeccompPodAnnotationKey] {
		return true
	}
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return true
	}
	changed := func(c, oc *corev1.Container) bool {
		key := corev1.SeccompContainerAnnotationKeyPrefix + c.Name
		return c.Image != oc.Image || pod.Annotations[key] != old.Annotations[key]
	}
	for i := range pod.Spec.Containers {
		if changed(&pod.Spec.Containers[i], &old.Spec.Containers[i]) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if changed(&pod.Spec.InitContainers[i], &old.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		var oc *corev1.Container
		for j := range old.Spec.EphemeralContainers {
			if old.Spec.EphemeralContainers[j].Name == c.Name {
				oc = (*corev1.Container)(&old.Spec.EphemeralContainers[j].EphemeralContainerCommon)
				break
			}
		}
		if oc == nil || changed(c, oc) {
			return true
		}
	}
	return false
}

// admitPod checks a pod, or a workload's pod template (enforce false: only
// warned about), against its namespace's policy.
func (p *Plugin) admitPod(ctx context.Context, a *admission.Attributes, meta *metav1.ObjectMeta, spec *corev1.PodSpec, enforce bool) error {
	if slices.Contains(p.exempt.Namespaces, a.Namespace) || (a.User != nil && slices.Contains(p.exempt.Usernames, a.User.Name)) ||
		p.exemptRuntimeClass(spec) {
		return nil
	}
	ns, err := p.namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // NamespaceLifecycle refuses these
		}
		return fmt.Errorf("error reading namespace %s: %w", a.Namespace, err)
	}
	// Bad labels were refused when written; any left are read as upstream
	// reads them (enforce fails closed, warn open).
	pol, _ := policyOf(ns.Labels, p.defaults)
	warn := pol.warn
	// An unset warn level follows a stricter enforce one, as upstream:
	// workloads then hear at creation that their pods will be refused.
	if _, set := ns.Labels[WarnLabel]; !set && rank(pol.enforce.level) > rank(warn.level) {
		warn.level = pol.enforce.level
		if _, ok := ns.Labels[WarnVersionLabel]; !ok {
			warn.version = pol.enforce.version
		}
	}
	if enforce && pol.enforce.level != Privileged {
		if v := violationsOf(pol.enforce.level, meta, spec); len(v) > 0 {
			return apierrors.NewForbidden(podsGR, a.Name, fmt.Errorf("violates PodSecurity %q: %s", pol.enforce, v.detail()))
		}
	}
	// Workloads are never refused, only warned about, as upstream. A pod
	// that passed enforce at the warn level (the usual case: warn follows
	// enforce) has nothing to be warned about.
	if warn.level != Privileged && !(enforce && warn.level == pol.enforce.level) {
		if v := violationsOf(warn.level, meta, spec); len(v) > 0 {
			admission.Warn(ctx, fmt.Sprintf("would violate PodSecurity %q: %s", warn, v.detail()))
		}
	}
	return nil
}

// levelVersion is one mode's level and version.
type levelVersion struct{ level, version string }

func (l levelVersion) String() string { return l.level + ":" + l.version }

// policy is a namespace's level and version for each mode.
type policy struct{ enforce, audit, warn levelVersion }

var (
	labelsPath    = field.NewPath("metadata", "labels")
	versionRegexp = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)
)

// policyOf reads a namespace's labels as upstream: an unset mode is
// def's (privileged:latest unless configured); a bad level is restricted for enforce and privileged
// for audit and warn, a bad version latest, and each bad label is an error.
func policyOf(labels map[string]string, def policy) (policy, field.ErrorList) {
	pol := def
	var errs field.ErrorList
	for _, m := range []struct {
		lv                       *levelVersion
		levelLabel, versionLabel string
		badLevel                 string
	}{
		{&pol.enforce, EnforceLabel, EnforceVersionLabel, Restricted},
		{&pol.audit, AuditLabel, AuditVersionLabel, Privileged},
		{&pol.warn, WarnLabel, WarnVersionLabel, Privileged},
	} {
		if v, ok := labels[m.levelLabel]; ok {
			if v == Privileged || v == Baseline || v == Restricted {
				m.lv.level = v
			} else {
				m.lv.level = m.badLevel
				errs = append(errs, field.Invalid(labelsPath.Key(m.levelLabel), v,
					"must be one of "+strings.Join([]string{Privileged, Baseline, Restricted}, ", ")))
			}
		}
		if v, ok := labels[m.versionLabel]; ok {
			if validVersion(v) {
				m.lv.version = v
			} else {
				errs = append(errs, field.Invalid(labelsPath.Key(m.versionLabel), v, `must be "latest" or "v1.x"`))
			}
		}
	}
	return pol, errs
}

func validVersion(v string) bool {
	if v == "latest" {
		return true
	}
	m := versionRegexp.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	_, err := strconv.Atoi(m[1])
	return err == nil
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

// validateNamespace refuses bad pod-security labels (on update only when
// the update changes what is wrong, so that controllers' updates of a
// namespace labelled before the check go through), and warns about the
// existing pods an update's stricter enforce level would refuse.
func (p *Plugin) validateNamespace(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" {
		return nil
	}
	ns, ok := a.Object.(*corev1.Namespace)
	if !ok {
		return nil
	}
	pol, errs := policyOf(ns.Labels, p.defaults)
	if a.Operation == admission.Create {
		if len(errs) > 0 {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, ns.Name, errs)
		}
		p.warnExemptNamespace(ctx, ns, pol)
		return nil
	}
	old, ok := a.OldObject.(*corev1.Namespace)
	if !ok {
		return nil
	}
	oldPol, oldErrs := policyOf(old.Labels, p.defaults)
	if len(errs) > 0 && (len(oldErrs) == 0 || !reflect.DeepEqual(errs, oldErrs)) {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, ns.Name, errs)
	}
	// As upstream, existing pods are checked only when the enforce level
	// becomes stricter or its version changes to a level other than
	// privileged.
	if pol.enforce == oldPol.enforce || pol.enforce.level == Privileged ||
		(pol.enforce.version == oldPol.enforce.version && rank(pol.enforce.level) <= rank(oldPol.enforce.level)) {
		return nil
	}
	if slices.Contains(p.exempt.Namespaces, ns.Name) {
		p.warnExemptNamespace(ctx, ns, pol)
		return nil
	}
	for _, w := range p.checkPods(ctx, ns.Name, pol.enforce) {
		admission.Warn(ctx, w)
	}
	return nil
}

// warnExemptNamespace tells whoever labels an exempt namespace, as
// upstream, that the levels its labels set will not be enforced.
func (p *Plugin) warnExemptNamespace(ctx context.Context, ns *corev1.Namespace, pol policy) {
	if !slices.Contains(p.exempt.Namespaces, ns.Name) || pol == p.defaults ||
		(pol.enforce.level == Privileged && pol.audit.level == Privileged && pol.warn.level == Privileged) {
		return
	}
	var modes []string
	for _, m := range []struct {
		name, levelLabel, versionLabel string
		lv                             levelVersion
	}{
		{"enforce", EnforceLabel, EnforceVersionLabel, pol.enforce},
		{"audit", AuditLabel, AuditVersionLabel, pol.audit},
		{"warn", WarnLabel, WarnVersionLabel, pol.warn},
	} {
		_, level := ns.Labels[m.levelLabel]
		_, version := ns.Labels[m.versionLabel]
		if m.lv.level != Privileged && (level || version) {
			modes = append(modes, m.name+"="+m.lv.String())
		}
	}
	admission.Warn(ctx, fmt.Sprintf("namespace %q is exempt from Pod Security, and the policy (%s) will be ignored", ns.Name, strings.Join(modes, ", ")))
}

// exemptRuntimeClass reports whether the pod runs in a runtime class the
// configuration exempts.
func (p *Plugin) exemptRuntimeClass(spec *corev1.PodSpec) bool {
	return spec.RuntimeClassName != nil && slices.Contains(p.exempt.RuntimeClasses, *spec.RuntimeClassName)
}

// checkPods returns upstream's warnings about the namespace's pods that
// enforce would refuse: one line per distinct set of reasons, naming the
// first pod (by name) and how many others share it.
func (p *Plugin) checkPods(ctx context.Context, namespace string, enforce levelVersion) []string {
	if p.pods == nil {
		return nil
	}
	// At most the budget, and never more than half of what the request has
	// left, so that the namespace update itself still completes.
	timeout := p.timeout
	start := p.clock.Now()
	if d, ok := ctx.Deadline(); ok {
		if half := d.Sub(start) / 2; half < timeout {
			timeout = half
		}
	}
	deadline := start.Add(timeout)
	listCtx, cancel := context.WithTimeout(ctx, timeout)
	objs, err := p.pods.ListObjects(listCtx, podsGR, namespace)
	cancel()
	if err != nil {
		slog.ErrorContext(ctx, "PodSecurity: listing pods", "namespace", namespace, "err", err)
		return []string{"failed to list pods while checking new PodSecurity enforce level"}
	}
	pods := prioritise(objs, p.exemptRuntimeClass)
	total := len(pods)
	if len(pods) > p.maxPods {
		pods = pods[:p.maxPods]
	}
	type firstPod struct {
		name  string
		count int
	}
	// The lines are sorted at the end, so the map's order does not show.
	byReasons := map[string]*firstPod{}
	checked := 0
	for _, pod := range pods {
		checked++
		if v := violationsOf(enforce.level, &pod.ObjectMeta, &pod.Spec); len(v) > 0 {
			r := v.reasons()
			f, seen := byReasons[r]
			if !seen {
				f = &firstPod{name: pod.Name}
				byReasons[r] = f
			} else if pod.Name < f.name {
				f.name = pod.Name
			}
			f.count++
		}
		if ctx.Err() != nil || p.clock.Now().After(deadline) {
			break
		}
	}

	var out []string
	if checked < total {
		out = append(out, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(byReasons) > 0 {
		out = append(out, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, enforce))
	}
	lines := make([]string, 0, len(byReasons))
	for r, f := range byReasons {
		switch f.count {
		case 1:
			lines = append(lines, fmt.Sprintf("%s: %s", f.name, r))
		case 2:
			lines = append(lines, fmt.Sprintf("%s (and 1 other pod): %s", f.name, r))
		default:
			lines = append(lines, fmt.Sprintf("%s (and %d other pods): %s", f.name, f.count-1, r))
		}
	}
	sort.Strings(lines)
	return append(out, lines...)
}

// prioritise orders pods as upstream does before the bounded check: every
// pod without a controller and one pod per controller first, the other
// replicas (likely alike) after them.
func prioritise(objs []runtime.Object, exempt func(*corev1.PodSpec) bool) []*corev1.Pod {
	var first, replicas []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, o := range objs {
		pod, ok := o.(*corev1.Pod)
		if !ok || exempt(&pod.Spec) {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref == nil:
			first = append(first, pod)
		case seen[ref.UID]:
			replicas = append(replicas, pod)
		default:
			seen[ref.UID] = true
			first = append(first, pod)
		}
	}
	return append(first, replicas...)
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

// violation is one failed check: upstream's reason and its detail.
type violation struct{ reason, detail string }

type violations []violation

// detail is upstream's refusal text: "reason (detail), ...".
func (v violations) detail() string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = x.reason
		if x.detail != "" {
			parts[i] += " (" + x.detail + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// reasons is upstream's short text, for the lines about existing pods.
func (v violations) reasons() string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = x.reason
	}
	return strings.Join(parts, ", ")
}

// violationsOf returns the checks of level the pod fails, in upstream's
// check order.
func violationsOf(level string, meta interface{ GetAnnotations() map[string]string }, spec *corev1.PodSpec) violations {
	checks := baselineChecks
	if level == Restricted {
		checks = allChecks
	}
	var out violations
	for _, c := range checks {
		if reason, detail := c(meta.GetAnnotations(), spec); reason != "" {
			out = append(out, violation{reason, detail})
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
