// Package podrestart decides whether a container that ended runs again, as
// upstream's ContainerShouldRestart does with its ContainerRestartRules and
// RestartAllContainersOnContainerExits features on (both on by default in
// 1.36): the kubelet restarts containers by it, and the apiserver lets a
// terminated container's status run again only when it says so.
package podrestart

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// MatchingRule is the first of c's restartPolicyRules whose exit codes
// match exitCode.
func MatchingRule(c *corev1.Container, exitCode int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := slices.Contains(rule.ExitCodes.Values, exitCode)
		switch rule.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}

// AfterExit reports whether c, exited with exitCode, runs again: a matching
// rule of its own says so whatever its action (Restart restarts it alone,
// RestartAllContainers with every container of the pod), else its own
// restartPolicy, else the pod's. c may be nil (a container no longer in the
// spec): then the pod's policy decides.
func AfterExit(c *corev1.Container, spec *corev1.PodSpec, exitCode int32) bool {
	if c != nil && c.RestartPolicy != nil {
		if _, ok := MatchingRule(c, exitCode); ok {
			return true
		}
	}
	return ByPolicy(c, spec, exitCode != 0)
}

// ByPolicy reports whether c's own restartPolicy, else the pod's, restarts
// it after it ended, failed or not, its rules aside: what decides for a
// container whose exit code is not known (killed by its probe, or in no
// known state).
func ByPolicy(c *corev1.Container, spec *corev1.PodSpec, failed bool) bool {
	if c != nil && c.RestartPolicy != nil {
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return failed
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return failed
	}
	return true
}

// MayRestartAll reports whether a container of the pod has a
// RestartAllContainers rule, by which every container may run again.
func MayRestartAll(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, r := range c.RestartPolicyRules {
				if r.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}
