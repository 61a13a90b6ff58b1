package validation

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodTemplateSpec checks a workload's pod template: its labels and
// annotations, then its spec. The caller adds workload-specific rules (for
// example that a Deployment's template restarts Always).
func PodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	metaPath := fldPath.Child("metadata")
	errs := metav1validation.ValidateLabels(t.Labels, metaPath.Child("labels"))
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(t.Annotations, metaPath.Child("annotations"))...)
	errs = append(errs, PodSpec(&t.Spec, fldPath.Child("spec"))...)
	return errs
}

// PodSpec checks a pod's spec as upstream does for the fields kube-lite acts
// on: containers, volumes, restart and DNS policy, scheduling fields.
func PodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	volumes, volErrs := volumes(spec.Volumes, fldPath.Child("volumes"))
	errs = append(errs, volErrs...)

	names := sets.New[string]()
	initPath := fldPath.Child("initContainers")
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		p := initPath.Index(i)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		errs = append(errs, container(c, names, volumes, spec, false, sidecar, p)...)
		errs = append(errs, initContainerRules(c, sidecar, p)...)
	}
	ctrPath := fldPath.Child("containers")
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(ctrPath, ""))
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		errs = append(errs, container(c, names, volumes, spec, spec.HostNetwork, true, ctrPath.Index(i))...)
		errs = append(errs, containerRestartRules(c, ctrPath.Index(i))...)
	}

	errs = append(errs, enum(string(spec.RestartPolicy), fldPath.Child("restartPolicy"),
		string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever))...)
	errs = append(errs, enum(string(spec.DNSPolicy), fldPath.Child("dnsPolicy"),
		string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone))...)
	errs = append(errs, podSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		// Upstream keeps the field in its security context, and names it so.
		errs = append(errs, field.Invalid(fldPath.Child("securityContext", "shareProcessNamespace"), true,
			"ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	errs = append(errs, affinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, dnsConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	errs = append(errs, topologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, Messages(fldPath.Child("readinessGates").Index(i).Child("conditionType"), string(g.ConditionType),
			validation.IsQualifiedName(string(g.ConditionType)))...)
	}
	gates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		gp := fldPath.Child("schedulingGates").Index(i)
		errs = append(errs, Messages(gp, g.Name, validation.IsQualifiedName(g.Name))...)
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(gp, g.Name))
		}
		gates.Insert(g.Name)
	}
	for i, a := range spec.HostAliases {
		ap := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIPForLegacyField(ap.Child("ip"), a.IP, true, nil)...)
		for j, h := range a.Hostnames {
			errs = append(errs, Messages(ap.Child("hostnames").Index(j), h, validation.IsDNS1123Subdomain(h))...)
		}
	}
	if os := spec.OS; os != nil {
		switch os.Name {
		case corev1.Linux, corev1.Windows:
		case "":
			errs = append(errs, field.Required(fldPath.Child("os", "name"), "cannot be empty"))
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("os"), os.Name, []string{string(corev1.Linux), string(corev1.Windows)}))
		}
	}
	errs = append(errs, hostPortConflicts(spec, fldPath)...)
	if spec.NodeName != "" {
		errs = append(errs, Messages(fldPath.Child("nodeName"), spec.NodeName, validation.IsDNS1123Subdomain(spec.NodeName))...)
	}
	if spec.ServiceAccountName != "" {
		errs = append(errs, Messages(fldPath.Child("serviceAccountName"), spec.ServiceAccountName,
			validation.IsDNS1123Subdomain(spec.ServiceAccountName))...)
	}
	if spec.Hostname != "" {
		errs = append(errs, Messages(fldPath.Child("hostname"), spec.Hostname, validation.IsDNS1123Label(spec.Hostname))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, Messages(fldPath.Child("subdomain"), spec.Subdomain, validation.IsDNS1123Label(spec.Subdomain))...)
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, Messages(fldPath.Child("priorityClassName"), spec.PriorityClassName,
			validation.IsDNS1123Subdomain(spec.PriorityClassName))...)
	}
	if spec.PreemptionPolicy != nil {
		errs = append(errs, PreemptionPolicy(*spec.PreemptionPolicy, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, inclusiveRange(*spec.ActiveDeadlineSeconds, 1, 2147483647, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"),
			*spec.TerminationGracePeriodSeconds, isNegativeErrorMsg))
	}
	errs = append(errs, ResourceRequirements(spec.Resources, fldPath.Child("resources"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, Tolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	return errs
}

// maxDNSNameservers is what the resolver (glibc) uses at most; the search
// list limits are upstream's.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// dnsSubdomainUnderscore is an RFC 1123 subdomain whose labels may start
// with an underscore (_srv._tcp.example.com), as resolvers accept.
const dnsSubdomainUnderscorePattern = `_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*`

var dnsSubdomainUnderscore = regexp.MustCompile("^" + dnsSubdomainUnderscorePattern + "$")

func dnsSubdomainWithUnderscore(v string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(v) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fldPath, v, validation.DNS1123SubdomainMaxLength))
	}
	if !dnsSubdomainUnderscore.MatchString(v) {
		errs = append(errs, field.Invalid(fldPath, v, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '"+dnsSubdomainUnderscorePattern+"')"))
	}
	return errs
}

func dnsConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers,
			fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(fldPath.Child("nameservers").Index(i), ns, true, nil)...)
	}
	sp := fldPath.Child("searches")
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(sp, cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(sp, cfg.Searches,
			fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range cfg.Searches {
		// A last "." stands for the root domain.
		if i == len(cfg.Searches)-1 && search == "." {
			continue
		}
		errs = append(errs, dnsSubdomainWithUnderscore(strings.TrimSuffix(search, "."), sp.Index(i))...)
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// hostPortConflicts: two containers of one pod cannot bind the same host
// port, protocol and address.
func hostPortConflicts(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	check := func(containers []corev1.Container, p *field.Path) {
		for ci, c := range containers {
			for pi, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
				if seen.Has(key) {
					errs = append(errs, field.Duplicate(p.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
				}
				seen.Insert(key)
			}
		}
	}
	check(spec.InitContainers, fldPath.Child("initContainers"))
	check(spec.Containers, fldPath.Child("containers"))
	return errs
}

// Tolerations checks keys, operators and effects.
func Tolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			errs = append(errs, Messages(p.Child("value"), t.Value, validation.IsValidLabelValue(t.Value))...)
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value,
					"value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator,
				[]string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		if t.Effect != "" {
			errs = append(errs, enum(string(t.Effect), p.Child("effect"),
				string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute))...)
		}
	}
	return errs
}

// enum reports Required for an empty value and NotSupported for one outside
// allowed.
// PreemptionPolicy accepts the two policies upstream knows, for pods and
// priority classes alike.
func PreemptionPolicy(p corev1.PreemptionPolicy, fldPath *field.Path) field.ErrorList {
	return enum(string(p), fldPath, string(corev1.PreemptLowerPriority), string(corev1.PreemptNever))
}

func enum(value string, fldPath *field.Path, allowed ...string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, allowed)}
}

// volumes checks sources and names and returns the set of valid volumes'
// names for the volume mounts to refer to. As upstream, a volume with any
// error is left out of the set (its mounts are "Not found", a later volume
// of the same name is no duplicate), and its source errors come first.
func volumes(vols []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	names := sets.New[string]()
	var errs field.ErrorList
	for i := range vols {
		v := &vols[i]
		p := fldPath.Index(i)
		volErrs := volumeSource(&v.VolumeSource, p)
		volErrs = append(volErrs, DNSLabel(v.Name, p.Child("name"))...)
		if names.Has(v.Name) {
			volErrs = append(volErrs, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(volErrs) == 0 {
			names.Insert(v.Name)
		}
		errs = append(errs, volErrs...)
	}
	return names, errs
}

// volumeSource insists on exactly one source and checks the sources that
// the kubelet implements.
func volumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	set := setPointerFields(src)
	if len(set) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	// Upstream looks at emptyDir first, then the others in field order; the
	// first one found is the volume's, each further one is refused.
	if i := slices.Index(set, "emptyDir"); i > 0 {
		set = append([]string{"emptyDir"}, slices.Delete(set, i, i+1)...)
	}
	var errs field.ErrorList
	for _, extra := range set[1:] {
		errs = append(errs, field.Forbidden(fldPath.Child(extra), "may not specify more than 1 volume type"))
	}
	switch set[0] {
	case "emptyDir":
		if src.EmptyDir.SizeLimit != nil {
			errs = append(errs, NonnegativeQuantity(*src.EmptyDir.SizeLimit, fldPath.Child("emptyDir", "sizeLimit"))...)
		}
	case "hostPath":
		p := fldPath.Child("hostPath")
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else if hasDotDot(src.HostPath.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.HostPath.Path, "must not contain '..'"))
		}
		if t := src.HostPath.Type; t != nil && *t != corev1.HostPathUnset {
			errs = append(errs, enum(string(*t), p.Child("type"),
				string(corev1.HostPathDirectoryOrCreate), string(corev1.HostPathDirectory), string(corev1.HostPathFileOrCreate),
				string(corev1.HostPathFile), string(corev1.HostPathSocket), string(corev1.HostPathCharDev), string(corev1.HostPathBlockDev))...)
		}
	case "configMap":
		p := fldPath.Child("configMap")
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, keyToPaths(src.ConfigMap.Items, p.Child("items"))...)
		errs = append(errs, fileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
	case "secret":
		p := fldPath.Child("secret")
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, keyToPaths(src.Secret.Items, p.Child("items"))...)
		errs = append(errs, fileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
	case "persistentVolumeClaim":
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case "downwardAPI":
		p := fldPath.Child("downwardAPI")
		errs = append(errs, fileMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		// Upstream reports items' errors without their index.
		for _, item := range src.DownwardAPI.Items {
			errs = append(errs, relativePath(item.Path, p.Child("path"))...)
			switch {
			case item.FieldRef != nil:
				errs = append(errs, fieldRefPath(item.FieldRef.FieldPath, volumeFieldRefPaths, p.Child("fieldRef"))...)
				if item.ResourceFieldRef != nil {
					errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
				}
			case item.ResourceFieldRef != nil:
				rp := p.Child("resourceFieldRef")
				if item.ResourceFieldRef.ContainerName == "" {
					errs = append(errs, field.Required(rp.Child("containerName"), ""))
				}
				errs = append(errs, resourceFieldRef(item.ResourceFieldRef, rp)...)
			default:
				errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
			}
			errs = append(errs, fileMode(item.Mode, p.Child("mode"))...)
		}
	}
	return errs
}

// setPointerFields lists, by JSON name, the non-nil pointer fields of a
// struct of optional alternatives such as VolumeSource.
func setPointerFields(v interface{}) []string {
	rv := reflect.ValueOf(v).Elem()
	var set []string
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
			set = append(set, name)
		}
	}
	return set
}

func keyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		p := fldPath.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		errs = append(errs, relativePath(it.Path, p.Child("path"))...)
		errs = append(errs, fileMode(it.Mode, p.Child("mode"))...)
	}
	return errs
}

func fileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0777) {
		return field.ErrorList{field.Invalid(fldPath, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

// relativePath requires a path that stays below the directory it is joined
// to: the kubelet writes projected files there.
func relativePath(p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	if hasDotDot(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must not contain '..'"))
	}
	return errs
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// container checks one container; names collects container names across
// init and regular containers, which share one namespace.
// hostNetwork is the pod's, for regular containers only: upstream does
// not match init containers' ports. hooks is whether the container runs
// alongside the others (a regular one or a sidecar) and so may have probes
// and lifecycle hooks; another init container's get only initContainerRules'
// Forbidden, as upstream's.
func container(c *corev1.Container, names sets.Set[string], volumes sets.Set[string], spec *corev1.PodSpec, hostNetwork, hooks bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := fldPath.Child("name")
	if c.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else {
		errs = append(errs, Messages(namePath, c.Name, validation.IsDNS1123Label(c.Name))...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(namePath, c.Name))
		}
		names.Insert(c.Name)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(fldPath.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, field.Invalid(fldPath.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, enum(string(c.ImagePullPolicy), fldPath.Child("imagePullPolicy"),
		string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever))...)
	errs = append(errs, enum(string(c.TerminationMessagePolicy), fldPath.Child("terminationMessagePolicy"),
		string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError))...)
	errs = append(errs, ports(c.Ports, hostNetwork, fldPath.Child("ports"))...)
	errs = append(errs, envVars(c.Env, fldPath.Child("env"))...)
	errs = append(errs, envFrom(c.EnvFrom, fldPath.Child("envFrom"))...)
	errs = append(errs, volumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, ResourceRequirements(&c.Resources, fldPath.Child("resources"))...)
	errs = append(errs, containerSecurityContext(c.SecurityContext, spec.HostUsers == nil || *spec.HostUsers, fldPath.Child("securityContext"))...)
	if hooks {
		errs = append(errs, probe(c.LivenessProbe, true, fldPath.Child("livenessProbe"))...)
		errs = append(errs, probe(c.ReadinessProbe, false, fldPath.Child("readinessProbe"))...)
		errs = append(errs, probe(c.StartupProbe, true, fldPath.Child("startupProbe"))...)
	}
	if hooks && c.Lifecycle != nil {
		lp := fldPath.Child("lifecycle")
		if c.Lifecycle.PostStart != nil {
			errs = append(errs, lifecycleHandler(c.Lifecycle.PostStart, spec.TerminationGracePeriodSeconds, lp.Child("postStart"))...)
		}
		if c.Lifecycle.PreStop != nil {
			errs = append(errs, lifecycleHandler(c.Lifecycle.PreStop, spec.TerminationGracePeriodSeconds, lp.Child("preStop"))...)
		}
	}
	errs = append(errs, fileKeyRefVolumes(c.Env, spec, volumes, fldPath.Child("env"))...)
	return errs
}

// containerRestartRules checks a regular container's own restartPolicy and
// restartPolicyRules as upstream 1.36 (ContainerRestartRules, and
// RestartAllContainers as an action, both on by default there).
func containerRestartRules(c *corev1.Container, fldPath *field.Path) field.ErrorList {
	// Unlike enum, an empty value is an unsupported one here, as upstream.
	oneOf := func(v string, p *field.Path, allowed ...string) field.ErrorList {
		if slices.Contains(allowed, v) {
			return nil
		}
		return field.ErrorList{field.NotSupported(p, v, allowed)}
	}
	var errs field.ErrorList
	policyPath, rulesPath := fldPath.Child("restartPolicy"), fldPath.Child("restartPolicyRules")
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) > 0:
		errs = append(errs, field.Required(policyPath, "must specify restartPolicy when restart rules are used"))
	case c.RestartPolicy != nil:
		errs = append(errs, oneOf(string(*c.RestartPolicy), policyPath, string(corev1.ContainerRestartPolicyAlways),
			string(corev1.ContainerRestartPolicyNever), string(corev1.ContainerRestartPolicyOnFailure))...)
	}
	if n := len(c.RestartPolicyRules); n > 20 {
		errs = append(errs, field.TooMany(rulesPath, n, 20))
	}
	for i, rule := range c.RestartPolicyRules {
		p := rulesPath.Index(i)
		errs = append(errs, oneOf(string(rule.Action), p.Child("action"),
			string(corev1.ContainerRestartRuleActionRestart), string(corev1.ContainerRestartRuleActionRestartAllContainers))...)
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(p.Child("exitCodes"), "must be specified"))
			continue
		}
		errs = append(errs, oneOf(string(rule.ExitCodes.Operator), p.Child("exitCodes", "operator"),
			string(corev1.ContainerRestartRuleOnExitCodesOpIn), string(corev1.ContainerRestartRuleOnExitCodesOpNotIn))...)
		if n := len(rule.ExitCodes.Values); n > 255 {
			errs = append(errs, field.TooMany(p.Child("exitCodes", "values"), n, 255))
		}
	}
	return errs
}

// initContainerRules: only sidecars (restartPolicy Always) run alongside the
// main containers, so only they may have probes and lifecycle hooks. Any
// init container's restartPolicy and restartPolicyRules are checked as a
// regular container's: as upstream 1.36 (ContainerRestartRules), Never and
// OnFailure decide, over the pod's policy, whether a failed one runs again.
func initContainerRules(c *corev1.Container, sidecar bool, fldPath *field.Path) field.ErrorList {
	errs := containerRestartRules(c, fldPath)
	if sidecar {
		return errs
	}
	const msg = "may not be set for init containers without restartPolicy=Always"
	if c.Lifecycle != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("lifecycle"), msg))
	}
	if c.LivenessProbe != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("livenessProbe"), msg))
	}
	if c.ReadinessProbe != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("readinessProbe"), msg))
	}
	if c.StartupProbe != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("startupProbe"), msg))
	}
	return errs
}

func ports(ps []corev1.ContainerPort, hostNetwork bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ps {
		ip := fldPath.Index(i)
		if p.Name != "" {
			errs = append(errs, Messages(ip.Child("name"), p.Name, validation.IsValidPortName(p.Name))...)
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(ip.Child("containerPort"), ""))
		} else {
			errs = append(errs, Messages(ip.Child("containerPort"), p.ContainerPort, validation.IsValidPortNum(int(p.ContainerPort)))...)
		}
		if p.HostPort != 0 {
			errs = append(errs, Messages(ip.Child("hostPort"), p.HostPort, validation.IsValidPortNum(int(p.HostPort)))...)
			if hostNetwork && p.HostPort != p.ContainerPort {
				errs = append(errs, field.Invalid(ip.Child("hostPort"), p.HostPort,
					"must match `containerPort` when `hostNetwork` is true"))
			}
		}
		errs = append(errs, Protocol(p.Protocol, ip.Child("protocol"))...)
	}
	return errs
}

// Protocol accepts TCP, UDP and SCTP.
func Protocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	return enum(string(p), fldPath, string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP))
}

// envFieldRefPaths lists, sorted as upstream prints them, the pod fields
// an environment variable may read without a subscript.
var envFieldRefPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// volumeFieldRefPaths lists, sorted as upstream prints them, the pod
// fields a downward API volume file may hold.
var volumeFieldRefPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// downwardAPIFieldLabels are the pod field paths upstream's v1 conversion
// knows; others fail to convert before the per-use list is consulted.
var downwardAPIFieldLabels = sets.New(
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)

// resourceFieldRefs lists, sorted as upstream prints them, the container
// resources the downward API exposes; hugepages-<size> under limits. and
// requests. are accepted too.
var resourceFieldRefs = []string{
	"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory",
}

func envVars(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		ip := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			// Upstream relaxed env var names (RelaxedEnvironmentVariableValidation, GA
			// in 1.34): any printable ASCII but '='.
			errs = append(errs, Messages(ip.Child("name"), ev.Name, validation.IsRelaxedEnvVarName(ev.Name))...)
		}
		if ev.ValueFrom == nil {
			continue
		}
		vp := ip.Child("valueFrom")
		if ev.Value != "" {
			errs = append(errs, field.Invalid(vp, "", "may not be specified when `value` is not empty"))
		}
		src := ev.ValueFrom
		n := 0
		if src.FieldRef != nil {
			n++
			fp := vp.Child("fieldRef")
			if src.FieldRef.APIVersion == "" {
				errs = append(errs, field.Required(fp.Child("apiVersion"), ""))
			}
			errs = append(errs, fieldRefPath(src.FieldRef.FieldPath, envFieldRefPaths, fp)...)
		}
		if src.ResourceFieldRef != nil {
			n++
			errs = append(errs, resourceFieldRef(src.ResourceFieldRef, vp.Child("resourceFieldRef"))...)
		}
		if src.ConfigMapKeyRef != nil {
			n++
			errs = append(errs, keyRef(src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key, vp.Child("configMapKeyRef"))...)
		}
		if src.SecretKeyRef != nil {
			n++
			errs = append(errs, keyRef(src.SecretKeyRef.Name, src.SecretKeyRef.Key, vp.Child("secretKeyRef"))...)
		}
		if src.FileKeyRef != nil {
			n++
			errs = append(errs, fileKeyRef(src.FileKeyRef, vp.Child("fileKeyRef"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(vp, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(vp, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// fieldRefPath checks a fieldRef's path as upstream: a path its conversion
// does not know is "error converting fieldPath", a subscript is allowed
// on labels and annotations only and must be a qualified name (reported
// on the fieldRef itself), and any other path must be in allowed.
func fieldRefPath(p string, allowed []string, fldPath *field.Path) field.ErrorList {
	pathPath := fldPath.Child("fieldPath")
	if p == "" {
		return field.ErrorList{field.Required(pathPath, "")}
	}
	if base, key, ok := splitSubscript(p); ok {
		switch base {
		case "metadata.annotations":
			return Messages(fldPath, strings.ToLower(key), validation.IsQualifiedName(strings.ToLower(key)))
		case "metadata.labels":
			return Messages(fldPath, key, validation.IsQualifiedName(key))
		}
		return field.ErrorList{field.Invalid(pathPath, p, "error converting fieldPath: field label does not support subscript: "+p)}
	}
	if !downwardAPIFieldLabels.Has(p) {
		return field.ErrorList{field.Invalid(pathPath, p, "error converting fieldPath: field label not supported: "+p)}
	}
	if !slices.Contains(allowed, p) {
		return field.ErrorList{field.NotSupported(pathPath, p, allowed)}
	}
	return nil
}

// splitSubscript splits metadata.labels['key'] into its path and key.
func splitSubscript(p string) (base, key string, ok bool) {
	if !strings.HasSuffix(p, "']") {
		return "", "", false
	}
	base, key, ok = strings.Cut(strings.TrimSuffix(p, "']"), "['")
	return base, key, ok
}

const (
	quantityDivisors = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	hugePagesLimits  = "limits.hugepages-"
	hugePagesReqs    = "requests.hugepages-"
)

var validQuantityDivisors = sets.New(strings.Split(quantityDivisors, ", ")...)

// resourceFieldRef checks the resource a downward API value reads and the
// divisor it is shown in, as upstream.
func resourceFieldRef(ref *corev1.ResourceFieldSelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	r := ref.Resource
	switch {
	case r == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case slices.Contains(resourceFieldRefs, r), strings.HasPrefix(r, hugePagesLimits), strings.HasPrefix(r, hugePagesReqs):
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), r, resourceFieldRefs))
	}
	if ref.Divisor.IsZero() {
		return errs
	}
	divisor, dp := ref.Divisor.String(), fldPath.Child("divisor")
	var what string
	switch {
	case r == "limits.cpu" || r == "requests.cpu":
		if divisor != "1m" && divisor != "1" {
			errs = append(errs, field.Invalid(dp, r, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
		return errs
	case r == "limits.memory" || r == "requests.memory":
		what = "memory"
	case r == "limits.ephemeral-storage" || r == "requests.ephemeral-storage":
		what = "local ephemeral storage"
	case strings.HasPrefix(r, hugePagesLimits), strings.HasPrefix(r, hugePagesReqs):
		what = "hugepages"
	default:
		return errs
	}
	if !validQuantityDivisors.Has(divisor) {
		errs = append(errs, field.Invalid(dp, r, fmt.Sprintf("only divisor's values %s are supported with the %s resource", quantityDivisors, what)))
	}
	return errs
}

// fileKeyRef checks the fields of an env value read from a file; that the
// volume exists and is an emptyDir is checked with the container's other
// volume references.
func fileKeyRef(ref *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		errs = append(errs, Messages(fldPath.Child("key"), ref.Key, validation.IsRelaxedEnvVarName(ref.Key))...)
	}
	if ref.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	} else if hasDotDot(ref.Path) {
		errs = append(errs, field.Invalid(fldPath.Child("path"), ref.Path, "must not contain '..'"))
	}
	if ref.VolumeName == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeName"), ""))
	}
	return errs
}

// fileKeyRefVolumes checks that each fileKeyRef names a valid emptyDir
// volume of the pod.
func fileKeyRefVolumes(env []corev1.EnvVar, spec *corev1.PodSpec, valid sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		if ev.ValueFrom == nil || ev.ValueFrom.FileKeyRef == nil {
			continue
		}
		name := ev.ValueFrom.FileKeyRef.VolumeName
		p := fldPath.Index(i).Child("valueFrom", "fileKeyRef", "volumeName")
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		switch {
		case !valid.Has(name) || i < 0:
			errs = append(errs, field.NotFound(p, name))
		case spec.Volumes[i].EmptyDir == nil:
			errs = append(errs, field.Invalid(p, name, "referenced volume must be of type emptyDir"))
		}
	}
	return errs
}

func keyRef(name, key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		errs = append(errs, Messages(fldPath.Child("key"), key, validation.IsConfigMapKey(key))...)
	}
	return errs
}

func envFrom(srcs []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range srcs {
		ip := fldPath.Index(i)
		if s.Prefix != "" {
			errs = append(errs, Messages(ip.Child("prefix"), s.Prefix, validation.IsRelaxedEnvVarName(s.Prefix))...)
		}
		switch {
		case s.ConfigMapRef != nil && s.SecretRef != nil:
			errs = append(errs, field.Invalid(ip, "", "may not have more than one field specified at a time"))
		case s.ConfigMapRef != nil:
			if s.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(ip.Child("configMapRef", "name"), ""))
			}
		case s.SecretRef != nil:
			if s.SecretRef.Name == "" {
				errs = append(errs, field.Required(ip.Child("secretRef", "name"), ""))
			}
		default:
			errs = append(errs, field.Invalid(ip, "", "must specify one of: `configMapRef` or `secretRef`"))
		}
	}
	return errs
}

func volumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		ip := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(ip.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(ip.Child("mountPath"), ""))
		} else {
			if paths.Has(m.MountPath) {
				errs = append(errs, field.Invalid(ip.Child("mountPath"), m.MountPath, "must be unique"))
			}
			paths.Insert(m.MountPath)
		}
		if m.SubPath != "" {
			if path.IsAbs(m.SubPath) {
				errs = append(errs, field.Invalid(ip.Child("subPath"), m.SubPath, "must be a relative path"))
			}
			if hasDotDot(m.SubPath) {
				errs = append(errs, field.Invalid(ip.Child("subPath"), m.SubPath, "must not contain '..'"))
			}
		}
	}
	return errs
}

func probe(p *corev1.Probe, successMustBeOne bool, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	h := &p.ProbeHandler
	errs := handler(setPointerFields(h), h.Exec, h.HTTPGet, h.TCPSocket, fldPath)
	if h.GRPC != nil {
		errs = append(errs, Messages(fldPath.Child("grpc", "port"), h.GRPC.Port, validation.IsValidPortNum(int(h.GRPC.Port)))...)
	}
	errs = append(errs, NonnegativeField(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, NonnegativeField(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, NonnegativeField(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, NonnegativeField(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, NonnegativeField(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if successMustBeOne && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds,
			"must be greater than 0"))
	}
	return errs
}

// lifecycleHandler checks a hook; a sleep must end within the pod's grace
// period (left unchecked when that is unset: its own error says why).
func lifecycleHandler(h *corev1.LifecycleHandler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	errs := handler(setPointerFields(h), h.Exec, h.HTTPGet, h.TCPSocket, fldPath)
	if h.Sleep != nil && gracePeriod != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *gracePeriod) {
		errs = append(errs, field.Invalid(fldPath.Child("sleep"), h.Sleep.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod)))
	}
	return errs
}

// handler checks the action shared by probes and lifecycle hooks: exactly
// one kind (set lists the kinds given), and that kind's own fields.
func handler(set []string, exec *corev1.ExecAction, get *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, fldPath *field.Path) field.ErrorList {
	if len(set) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a handler type")}
	}
	if len(set) > 1 {
		return field.ErrorList{field.Forbidden(fldPath.Child(set[1]), "may not specify more than 1 handler type")}
	}
	var errs field.ErrorList
	if exec != nil && len(exec.Command) == 0 {
		errs = append(errs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if get != nil {
		p := fldPath.Child("httpGet")
		if get.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, portNumOrName(get.Port, p.Child("port"))...)
		errs = append(errs, enum(string(get.Scheme), p.Child("scheme"), string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS))...)
		for i, hdr := range get.HTTPHeaders {
			errs = append(errs, Messages(p.Child("httpHeaders").Index(i).Child("name"), hdr.Name, validation.IsHTTPHeaderName(hdr.Name))...)
		}
	}
	if tcp != nil {
		errs = append(errs, portNumOrName(tcp.Port, fldPath.Child("tcpSocket", "port"))...)
	}
	return errs
}

// PortNumOrName accepts a port number (1-65535) or an IANA service name.
func portNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		return Messages(fldPath, port.StrVal, validation.IsValidPortName(port.StrVal))
	}
	return Messages(fldPath, port.IntVal, validation.IsValidPortNum(int(port.IntVal)))
}
