package validation

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podSecurityContext checks the pod-level security context as upstream:
// ids in range, sysctl names, the fsGroup change policy, and the seccomp
// and AppArmor profiles.
func podSecurityContext(sc *corev1.PodSecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		errs = append(errs, Messages(fldPath.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, Messages(fldPath.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, Messages(fldPath.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, Messages(fldPath.Child("supplementalGroups").Index(i), g, validation.IsValidGroupID(g))...)
	}
	errs = append(errs, sysctls(sc.Sysctls, fldPath.Child("sysctls"))...)
	if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeAlways && *p != corev1.FSGroupChangeOnRootMismatch {
		errs = append(errs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), *p,
			[]string{string(corev1.FSGroupChangeAlways), string(corev1.FSGroupChangeOnRootMismatch)}))
	}
	errs = append(errs, seccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	errs = append(errs, appArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if p := sc.SupplementalGroupsPolicy; p != nil && *p != corev1.SupplementalGroupsPolicyMerge && *p != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), *p,
			[]string{string(corev1.SupplementalGroupsPolicyMerge), string(corev1.SupplementalGroupsPolicyStrict)}))
	}
	return errs
}

const sysctlMaxLength = 253

// sysctlName is upstream's pattern for a sysctl name, dotted or slashed.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

func sysctls(ss []corev1.Sysctl, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range ss {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlName)))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen[s.Name] = true
	}
	return errs
}

func seccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile == nil {
			return field.ErrorList{field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost")}
		}
		return localDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))
	case corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
		if sp.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("localhostProfile"), internalSeccomp(sp), "can only be set when seccomp type is Localhost")}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath.Child("type"), sp.Type, []string{
		string(corev1.SeccompProfileTypeLocalhost), string(corev1.SeccompProfileTypeRuntimeDefault), string(corev1.SeccompProfileTypeUnconfined)})}
}

// localDescendingPath is relativePath without the required check: an
// empty profile path is the profile root, as upstream allows.
func localDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return nil
	}
	return relativePath(p, fldPath)
}

func appArmorProfile(ap *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	lp := fldPath.Child("localhostProfile")
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		const maxLocalhostProfileLength = 4095
		switch {
		case ap.LocalhostProfile == nil || *ap.LocalhostProfile == "":
			return field.ErrorList{field.Required(lp, "must be set when AppArmor type is Localhost")}
		case len(*ap.LocalhostProfile) > maxLocalhostProfileLength:
			return field.ErrorList{field.TooLong(lp, "", maxLocalhostProfileLength)}
		}
		return nil
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(lp, *ap.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath.Child("type"), ap.Type, []string{
		string(corev1.AppArmorProfileTypeLocalhost), string(corev1.AppArmorProfileTypeRuntimeDefault), string(corev1.AppArmorProfileTypeUnconfined)})}
}

// containerSecurityContext checks a container's security context as
// upstream. Privileged containers are allowed: kube-lite's apiserver runs
// as upstream's does with --allow-privileged.
func containerSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, Messages(fldPath.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, Messages(fldPath.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if pm := sc.ProcMount; pm != nil {
		switch *pm {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			if hostUsers {
				errs = append(errs, field.Invalid(fldPath.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
			}
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *pm,
				[]string{string(corev1.DefaultProcMount), string(corev1.UnmaskedProcMount)}))
		}
	}
	errs = append(errs, seccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, internalSecurityContext(sc), "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, internalSecurityContext(sc), "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, appArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return errs
}

// The types below print a security context as upstream's errors show it:
// upstream's internal types, whose fields have no JSON names.
type (
	scCapabilities struct{ Add, Drop []corev1.Capability }
	scSELinux      struct{ User, Role, Type, Level string }
	scWindows      struct {
		GMSACredentialSpecName, GMSACredentialSpec, RunAsUserName *string
		HostProcess                                               *bool
	}
	scSeccomp  struct{ Type, LocalhostProfile *string }
	scAppArmor struct{ Type, LocalhostProfile *string }
	scInternal struct {
		Capabilities                                                   *scCapabilities
		Privileged                                                     *bool
		SELinuxOptions                                                 *scSELinux
		WindowsOptions                                                 *scWindows
		RunAsUser, RunAsGroup                                          *int64
		RunAsNonRoot, ReadOnlyRootFilesystem, AllowPrivilegeEscalation *bool
		ProcMount                                                      *corev1.ProcMountType
		SeccompProfile                                                 *scSeccomp
		AppArmorProfile                                                *scAppArmor
	}
)

func internalSeccomp(sp *corev1.SeccompProfile) *scSeccomp {
	if sp == nil {
		return nil
	}
	t := string(sp.Type)
	return &scSeccomp{Type: &t, LocalhostProfile: sp.LocalhostProfile}
}

func internalSecurityContext(sc *corev1.SecurityContext) scInternal {
	out := scInternal{
		Privileged: sc.Privileged, RunAsUser: sc.RunAsUser, RunAsGroup: sc.RunAsGroup, RunAsNonRoot: sc.RunAsNonRoot,
		ReadOnlyRootFilesystem: sc.ReadOnlyRootFilesystem, AllowPrivilegeEscalation: sc.AllowPrivilegeEscalation,
		ProcMount: sc.ProcMount, SeccompProfile: internalSeccomp(sc.SeccompProfile),
	}
	if c := sc.Capabilities; c != nil {
		out.Capabilities = &scCapabilities{Add: c.Add, Drop: c.Drop}
	}
	if o := sc.SELinuxOptions; o != nil {
		out.SELinuxOptions = &scSELinux{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	if w := sc.WindowsOptions; w != nil {
		out.WindowsOptions = &scWindows{GMSACredentialSpecName: w.GMSACredentialSpecName, GMSACredentialSpec: w.GMSACredentialSpec,
			RunAsUserName: w.RunAsUserName, HostProcess: w.HostProcess}
	}
	if a := sc.AppArmorProfile; a != nil {
		t := string(a.Type)
		out.AppArmorProfile = &scAppArmor{Type: &t, LocalhostProfile: a.LocalhostProfile}
	}
	return out
}
