package wait

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseForAndMet(t *testing.T) {
	ready := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{"replicas": int64(3), "template": map[string]interface{}{}},
		"status": map[string]interface{}{"phase": "Running", "conditions": []interface{}{
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
		{"create", ready, true},
		{"create", nil, false},
		{"jsonpath={.status.phase}=Running", ready, true},
		{"jsonpath=.status.phase=Pending", ready, false},
		{`jsonpath={.status.phase}="Running"`, ready, true},
		{"jsonpath={.spec.replicas}=3", ready, true},
		{"jsonpath={.status.phase}", ready, true},
		{"jsonpath={.status.nothing}", ready, false},
		{`jsonpath={.status.conditions[?(@.type=="Ready")].status}=True`, ready, true},
		{"jsonpath={.status.phase}=Running", nil, false},
	}
	for _, tt := range tests {
		c, err := ParseFor(tt.for_)
		if err != nil {
			t.Fatalf("ParseFor(%q): %v", tt.for_, err)
		}
		got, err := c.Met(tt.obj)
		if err != nil {
			t.Fatalf("--for=%s: %v", tt.for_, err)
		}
		if got != tt.wantMet {
			t.Errorf("--for=%s on %v: met = %v, want %v", tt.for_, tt.obj != nil, got, tt.wantMet)
		}
	}
	for _, bad := range []string{"", "ready", "jsonpath", "jsonpath={.a}=", "jsonpath={.a}=1=2", "jsonpath={.a"} {
		if _, err := ParseFor(bad); err == nil {
			t.Errorf("ParseFor(%q) accepted", bad)
		}
	}
	c, _ := ParseFor("jsonpath={.spec.template}=x")
	if _, err := c.Met(ready); err == nil {
		t.Error("a jsonpath that leads to an object was compared with a value")
	}
}
