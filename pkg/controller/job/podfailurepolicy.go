package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failureVerdict is what spec.podFailurePolicy makes of one failed pod.
type failureVerdict struct {
	// action is the matching rule's, "" when none matched.
	action batchv1.PodFailurePolicyAction
	// counts is false for a failure an Ignore rule lets pass: it is not in
	// status.failed and does not use up backoffLimit(PerIndex).
	counts bool
	// failJob is the Job's failure message when a FailJob rule matched.
	failJob string
}

// matchPodFailurePolicy runs a failed pod through the rules, first match
// wins; rules whose action this controller does not know are skipped, as
// the API asks clients to do.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) failureVerdict {
	if policy == nil {
		return failureVerdict{counts: true}
	}
	for i, rule := range policy.Rules {
		// The failure message, needed only when the rule fails the Job.
		var failJob func() string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchExitCodes(&p.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failJob = func() string {
				return fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
					cs.Name, p.Namespace, p.Name, cs.State.Terminated.ExitCode, rule.Action, i)
			}
		case rule.OnPodConditions != nil:
			cond := matchPodConditions(&p.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			failJob = func() string {
				return fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", p.Namespace, p.Name, cond.Type, rule.Action, i)
			}
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionIgnore:
			return failureVerdict{action: rule.Action}
		case batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return failureVerdict{action: rule.Action, counts: true}
		case batchv1.PodFailurePolicyActionFailJob:
			return failureVerdict{action: rule.Action, counts: true, failJob: failJob()}
		}
	}
	return failureVerdict{counts: true}
}

// matchExitCodes is the first container, then init container, that ended
// with a non-zero exit code the requirement matches.
func matchExitCodes(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			term := cs.State.Terminated
			if term == nil || term.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != cs.Name) {
				continue
			}
			in := slices.Contains(req.Values, term.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return cs
			}
		}
	}
	return nil
}

func matchPodConditions(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		for _, pat := range patterns {
			status := pat.Status
			if status == "" {
				// The API defaults it to True.
				status = corev1.ConditionTrue
			}
			if c.Type == pat.Type && c.Status == status {
				return c
			}
		}
	}
	return nil
}

// onlyReplaceFailedPods: a deleted pod is replaced only once it is gone or
// Failed (podReplacementPolicy Failed, which a pod failure policy implies:
// its rules need the pod's final state).
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	if job.Spec.PodReplacementPolicy != nil {
		return *job.Spec.PodReplacementPolicy == batchv1.Failed
	}
	return job.Spec.PodFailurePolicy != nil
}
