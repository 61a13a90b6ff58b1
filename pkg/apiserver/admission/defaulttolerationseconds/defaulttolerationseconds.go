// Package defaulttolerationseconds gives new pods a bounded toleration of
// not-ready and unreachable nodes, so that the node lifecycle controller
// evicts them after five minutes rather than never.
package defaulttolerationseconds

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// DefaultSeconds is upstream's default for both tolerations.
const DefaultSeconds int64 = 300

// Plugin is the DefaultTolerationSeconds admission plugin.
type Plugin struct {
	notReady, unreachable int64
}

// New returns the plugin with upstream's 300 s for both taints.
func New() *Plugin { return &Plugin{notReady: DefaultSeconds, unreachable: DefaultSeconds} }

// Name implements admission.Mutator.
func (p *Plugin) Name() string { return "DefaultTolerationSeconds" }

// Admit implements admission.Mutator. Updates are admitted too, as
// upstream: an update that drops the defaults (a patch replacing the
// tolerations) gets them back instead of being refused for removing
// existing tolerations.
func (p *Plugin) Admit(_ context.Context, a *admission.Attributes) error {
	if (a.Operation != admission.Create && a.Operation != admission.Update) || a.Subresource != "" || !isPods(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	var hasNotReady, hasUnreachable bool
	for _, t := range pod.Spec.Tolerations {
		// A toleration the user wrote for the taint wins, as upstream.
		if tolerates(t, corev1.TaintNodeNotReady) {
			hasNotReady = true
		}
		if tolerates(t, corev1.TaintNodeUnreachable) {
			hasUnreachable = true
		}
	}
	if !hasNotReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, toleration(corev1.TaintNodeNotReady, p.notReady))
	}
	if !hasUnreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, toleration(corev1.TaintNodeUnreachable, p.unreachable))
	}
	return nil
}

func isPods(a *admission.Attributes) bool {
	return a.Resource != nil && a.Resource.GroupVersion.Group == "" && a.Resource.Name == "pods"
}

// tolerates reports a toleration of the taint's NoExecute effect; an empty
// key (with operator Exists) tolerates every taint, so the pod keeps
// running on a failed node and gets no bounded default.
func tolerates(t corev1.Toleration, key string) bool {
	if t.Effect != "" && t.Effect != corev1.TaintEffectNoExecute {
		return false
	}
	return t.Key == key || t.Key == ""
}

func toleration(key string, seconds int64) corev1.Toleration {
	s := seconds
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s}
}
