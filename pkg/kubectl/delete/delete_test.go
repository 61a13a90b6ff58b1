package delete

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPropagation(t *testing.T) {
	tests := map[string]metav1.DeletionPropagation{
		"background": metav1.DeletePropagationBackground,
		"Foreground": metav1.DeletePropagationForeground,
		"orphan":     metav1.DeletePropagationOrphan,
		"true":       metav1.DeletePropagationBackground,
		"false":      metav1.DeletePropagationOrphan,
	}
	for in, want := range tests {
		if got, err := propagation(in); err != nil || got != want {
			t.Errorf("propagation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := propagation("sideways"); err == nil {
		t.Error("propagation(sideways) accepted")
	}
}
