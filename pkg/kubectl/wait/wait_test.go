package wait

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseForAndMet(t *testing.T) {
	ready := &unstructured.Unstructured{Object: map[string]interface{}{"status": map[string]interface{}{"conditions": []interface{}{
		map[string]interface{}{"type": "Ready", "status": "True"},
		map[string]interface{}{"type": "Progressing", "status": "False"},
	}}}}
	tests := []struct {
		for_    string
		obj     *unstructured.Unstructured
		wantMet bool
	}{
		{"condition=Ready", ready, true},
		{"condition=ready", ready, true},
		{"condition=Ready=False", ready, false},
		{"condition=Progressing=false", ready, true},
		{"condition=Available", ready, false},
		{"condition=Ready", nil, false},
		{"delete", ready, false},
		{"delete", nil, true},
	}
	for _, tt := range tests {
		c, err := ParseFor(tt.for_)
		if err != nil {
			t.Fatalf("ParseFor(%q): %v", tt.for_, err)
		}
		if got := c.Met(tt.obj); got != tt.wantMet {
			t.Errorf("--for=%s on %v: met = %v, want %v", tt.for_, tt.obj != nil, got, tt.wantMet)
		}
	}
	for _, bad := range []string{"", "ready", "condition=", "jsonpath"} {
		if _, err := ParseFor(bad); err == nil {
			t.Errorf("ParseFor(%q) accepted", bad)
		}
	}
}
