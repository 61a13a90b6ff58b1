package get

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func pod(name string, labels map[string]string, images ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: img, Image: img})
	}
	return p
}

func TestCustomColumns(t *testing.T) {
	list := &corev1.PodList{Items: []corev1.Pod{*pod("a", map[string]string{"app": "web"}, "nginx", "envoy"), *pod("b", nil, "busybox")}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod("u", nil, "x"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		spec      string
		noHeaders bool
		obj       runtime.Object
		want      string
	}{
		{"list with a wildcard and a missing field", "NAME:.metadata.name,IMAGES:.spec.containers[*].image,APP:.metadata.labels.app", false, list,
			"NAME   IMAGES        APP\na      nginx,envoy   web\nb      busybox       <none>\n"},
		{"one object, relaxed paths, no headers", "N:metadata.name,I:{.spec.containers[0].image}", true, pod("c", nil, "redis"),
			"c     redis\n"}, // kubectl's tab writer pads cells to 6 columns
		{"unstructured object", "NAME:.metadata.name", false, &unstructured.Unstructured{Object: u}, "NAME\nu\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewCustomColumnsPrinter(tt.spec, tt.noHeaders)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := p.PrintObj(tt.obj, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}

func TestCustomColumnsRejectsBadSpecs(t *testing.T) {
	for _, spec := range []string{"", "NAME", "NAME:", ":.metadata.name", "NAME:.metadata[", "A:.a,B"} {
		if _, err := NewCustomColumnsPrinter(spec, false); err == nil {
			t.Errorf("spec %q accepted", spec)
		}
	}
}

func TestToTableFallsBackToNameAndAge(t *testing.T) {
	created := metav1.NewTime(metav1.Now().Add(-72*time.Hour - time.Minute))
	p := pod("plain", nil)
	p.CreationTimestamp = created
	table, err := defaultTable(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "plain" || table.ColumnDefinitions[0].Name != "Name" {
		t.Fatalf("table %+v", table)
	}
	// kubectl's --server-print=false columns: NAME and AGE.
	if table.ColumnDefinitions[1].Name != "Age" || table.Rows[0].Cells[1] != "3d" {
		t.Fatalf("second column %q, cell %v; want Age, 3d", table.ColumnDefinitions[1].Name, table.Rows[0].Cells[1])
	}
}

// TestCustomColumnsHeaderOnce: get -w prints each change with the same
// printer; the header comes once, above the first row, as with kubectl.
func TestCustomColumnsHeaderOnce(t *testing.T) {
	p, err := NewCustomColumnsPrinter("NAME:.metadata.name", false)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, name := range []string{"a", "b"} {
		if err := p.PrintObj(pod(name, nil, "x"), &out); err != nil {
			t.Fatal(err)
		}
	}
	if want := "NAME\na\nb\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestCustomColumnsFromFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want, wantErr string
	}{
		{"headers over paths, extra lines ignored", "NAME   IMAGE\n  metadata.name\t{.spec.containers[*].image}\r\nignored\n", "NAME   IMAGE\nc      redis\n", ""},
		{"empty", "", "", "invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs."},
		{"headers only", "NAME\n", "", "invalid template, missing spec line. Expected format is one line of space separated headers, one line of space separated column specs."},
		{"blank spec line", "NAME\n\n", "", "number of headers (1) and field specifications (0) don't match"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprint(i))
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := NewCustomColumnsPrinterFromFile(path)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := p.PrintObj(pod("c", nil, "redis"), &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}
