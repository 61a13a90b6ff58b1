package get

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// TestWatchTablePrinterServesEveryEvent: one printer prints the header over
// the first rows, whether the list's or an event's, and lays out an event
// whose table leaves the columns out (as a server may, once it sent them)
// under the columns it last printed.
func TestWatchTablePrinterServesEveryEvent(t *testing.T) {
	columns := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name"}, {Name: "Data", Type: "integer"}}
	table := func(withColumns bool, rows ...metav1.TableRow) *metav1.Table {
		tb := &metav1.Table{Rows: rows}
		if withColumns {
			tb.ColumnDefinitions = columns
		}
		return tb
	}
	row := func(name string, data int) metav1.TableRow {
		return metav1.TableRow{Cells: []interface{}{name, data}, Object: runtime.RawExtension{Raw: []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + name + `"}}`)}}
	}
	mapping := &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Scope: meta.RESTScopeNamespace}
	tests := []struct {
		name   string
		list   *metav1.Table // nil: --watch-only
		events []*metav1.Table
		want   string
	}{
		{"header over the list, none over the events", table(true, row("a", 1)), []*metav1.Table{table(true, row("b", 2)), table(false, row("b", 3))},
			"NAME   DATA\na      1\nb      2\nb      3\n"},
		{"empty list: header over the first event", table(true), []*metav1.Table{table(true, row("b", 2)), table(true, row("c", 0))},
			"NAME   DATA\nb      2\nc      0\n"},
		{"watch only", nil, []*metav1.Table{table(true, row("b", 2)), table(false, row("b", 3))},
			"NAME   DATA\nb      2\nb      3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &Options{streams: genericiooptions.IOStreams{Out: &out}}
			w := printers.GetNewTabWriter(&out)
			tp := o.tablePrinter(mapping, false, false)
			if tt.list != nil {
				if err := tp.PrintObj(tt.list, w); err != nil {
					t.Fatal(err)
				}
				w.Flush()
			}
			for _, ev := range tt.events {
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ev)
				if err != nil {
					t.Fatal(err)
				}
				u["kind"], u["apiVersion"] = "Table", "meta.k8s.io/v1"
				if err := o.printEvent(w, watch.Event{Type: watch.Modified, Object: &unstructured.Unstructured{Object: u}}, tp, nil); err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}
