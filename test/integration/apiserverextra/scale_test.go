package apiserverextra

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// TestScaleTable: `kubectl get --subresource=scale` asks for a Table, and
// gets upstream's NAME DESIRED AVAILABLE AGE for a Deployment's and a
// ReplicaSet's scale (it got the Scale itself), and metadata when it asks
// for that.
func TestScaleTable(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "kube-lite.local/busybox:1.35"}}}}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	if _, err := s.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: sel, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	raw := newRaw(t, s)
	for _, tc := range []struct {
		path, name string
		desired    float64
	}{
		{"/apis/apps/v1/namespaces/default/deployments/web/scale", "web", 3},
		{"/apis/apps/v1/namespaces/default/replicasets/web-rs/scale", "web-rs", 2},
	} {
		// What kubectl sends.
		r := raw.do(t, http.MethodGet, tc.path, "", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
		var table struct {
			metav1.TypeMeta
			ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
			Rows              []struct {
				Cells  []interface{}   `json:"cells"`
				Object json.RawMessage `json:"object"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(r.body, &table); err != nil || r.code != http.StatusOK {
			t.Fatalf("GET %s as Table: %d %v: %s", tc.path, r.code, err, r.body)
		}
		if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
			t.Fatalf("GET %s as Table: got a %s %s, want meta.k8s.io/v1 Table: %s", tc.path, table.APIVersion, table.Kind, r.body)
		}
		var cols []string
		for _, c := range table.ColumnDefinitions {
			cols = append(cols, c.Name+":"+c.Type)
		}
		if want := []string{"Name:string", "Desired:integer", "Available:integer", "Age:string"}; !slices.Equal(cols, want) {
			t.Errorf("%s columns %v, want upstream's %v", tc.path, cols, want)
		}
		if len(table.Rows) != 1 || len(table.Rows[0].Cells) != 4 || table.Rows[0].Cells[0] != tc.name ||
			table.Rows[0].Cells[1] != tc.desired || table.Rows[0].Cells[2] != float64(0) {
			t.Fatalf("%s rows %+v, want one: %s %v 0 <age>", tc.path, table.Rows, tc.name, tc.desired)
		}
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(table.Rows[0].Object, &obj); err != nil || obj.Kind != "PartialObjectMetadata" || obj.Name != tc.name {
			t.Errorf("%s row object %s (%v), want the scale's PartialObjectMetadata", tc.path, table.Rows[0].Object, err)
		}

		r = raw.do(t, http.MethodGet, tc.path, "", nil, "Accept", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
		var partial metav1.PartialObjectMetadata
		if err := json.Unmarshal(r.body, &partial); err != nil || r.code != http.StatusOK || partial.Kind != "PartialObjectMetadata" || partial.Name != tc.name {
			t.Errorf("GET %s as PartialObjectMetadata: %d %s", tc.path, r.code, r.body)
		}
	}

	// A scale's patch body is read as any other's.
	r := raw.do(t, http.MethodPatch, "/apis/apps/v1/namespaces/default/deployments/web/scale", "application/merge-patch+json", []byte(`{"spec":`))
	if st := r.status(t); st.Code != http.StatusBadRequest || st.Message != "error decoding patch: unexpected end of JSON input" {
		t.Errorf("scale patch that is not JSON: %d %q, want upstream's 400 error decoding patch: unexpected end of JSON input", st.Code, st.Message)
	}

	// Plain JSON is still the Scale.
	sc, err := s.Client.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 3 {
		t.Fatalf("GetScale: %v, %+v", err, sc)
	}
}
