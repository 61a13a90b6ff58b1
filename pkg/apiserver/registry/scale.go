package registry

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScaleSelector renders a workload's selector as a label query for the scale
// subresource's status.selector, which autoscalers parse: nothing rather than
// "<none>", and nothing for a selector that does not parse.
func ScaleSelector(ls *metav1.LabelSelector) string {
	if ls == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return ""
	}
	return s.String()
}
