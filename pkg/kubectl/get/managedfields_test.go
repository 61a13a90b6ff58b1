package get

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// JSON and YAML output hide metadata.managedFields unless
// --show-managed-fields asks for them, as kubectl's.
func TestObjectPrinterHidesManagedFields(t *testing.T) {
	obj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "a", "managedFields": []interface{}{
				map[string]interface{}{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:data": map[string]interface{}{}}},
			}},
			"data": map[string]interface{}{"k": "v"},
		}}
	}
	for _, output := range []string{"yaml", "json"} {
		for _, show := range []bool{false, true} {
			o := &Options{Output: output, ShowManagedFields: show}
			p, err := o.objectPrinter()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := p.PrintObj(obj(), &out); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), "managedFields"); got != show {
				t.Errorf("-o %s, --show-managed-fields=%v: managedFields shown %v:\n%s", output, show, got, out.String())
			}
			if !strings.Contains(out.String(), "kubectl") == show || !strings.Contains(out.String(), `k`) {
				t.Errorf("-o %s: %s", output, out.String())
			}
		}
	}
}
