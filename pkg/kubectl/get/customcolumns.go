package get

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// Column is one custom column: a header and a JSONPath into the object.
type Column struct {
	Header string
	Path   *jsonpath.JSONPath
}

// CustomColumnsPrinter prints -o custom-columns=HEADER:.path,...
type CustomColumnsPrinter struct {
	Columns   []Column
	NoHeaders bool

	// printedHeader keeps get -w from repeating the header over each
	// change it prints.
	printedHeader bool
}

// NewCustomColumnsPrinter parses "NAME:.metadata.name,IMAGE:.spec.containers[*].image".
func NewCustomColumnsPrinter(spec string, noHeaders bool) (*CustomColumnsPrinter, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	p := &CustomColumnsPrinter{NoHeaders: noHeaders}
	for _, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || header == "" || expr == "" {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		c, err := newColumn(header, expr)
		if err != nil {
			return nil, err
		}
		p.Columns = append(p.Columns, c)
	}
	return p, nil
}

// NewCustomColumnsPrinterFromFile reads -o custom-columns-file=FILE: a line
// of headers over a line of JSONPaths, each separated by whitespace. As
// kubectl, such a file always prints its header line, --no-headers or not.
func NewCustomColumnsPrinterFromFile(path string) (*CustomColumnsPrinter, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// kubectl's words, trailing newline included.
		return nil, fmt.Errorf("error reading template %s, %v\n", path, err)
	}
	lines := strings.SplitN(string(data), "\n", 3)
	const format = "Expected format is one line of space separated headers, one line of space separated column specs."
	if len(lines) < 1 || (len(lines) == 1 && lines[0] == "") {
		return nil, fmt.Errorf("invalid template, missing header line. %s", format)
	}
	if len(lines) < 2 || (len(lines) == 2 && lines[1] == "") {
		return nil, fmt.Errorf("invalid template, missing spec line. %s", format)
	}
	headers, exprs := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(headers) != len(exprs) {
		return nil, fmt.Errorf("number of headers (%d) and field specifications (%d) don't match", len(headers), len(exprs))
	}
	p := &CustomColumnsPrinter{}
	for i := range headers {
		c, err := newColumn(headers[i], exprs[i])
		if err != nil {
			return nil, err
		}
		p.Columns = append(p.Columns, c)
	}
	return p, nil
}

func newColumn(header, expr string) (Column, error) {
	jp := jsonpath.New(header).AllowMissingKeys(true)
	if err := jp.Parse(relaxed(expr)); err != nil {
		return Column{}, fmt.Errorf("invalid JSONPath %q in custom-columns: %w", expr, err)
	}
	return Column{Header: header, Path: jp}, nil
}

// relaxed accepts ".a.b", "a.b" and "{.a.b}" as kubectl does.
func relaxed(expr string) string {
	expr = strings.TrimSuffix(strings.TrimPrefix(expr, "{"), "}")
	if !strings.HasPrefix(expr, ".") {
		expr = "." + expr
	}
	return "{" + expr + "}"
}

// PrintObj prints one row per object (one per item of a list).
func (p *CustomColumnsPrinter) PrintObj(obj runtime.Object, out io.Writer) error {
	w := printers.GetNewTabWriter(out)
	defer w.Flush()
	if !p.NoHeaders && !p.printedHeader {
		p.printedHeader = true
		headers := make([]string, len(p.Columns))
		for i, c := range p.Columns {
			headers[i] = c.Header
		}
		fmt.Fprintln(w, strings.Join(headers, "\t"))
	}
	var objs []runtime.Object
	if meta.IsListType(obj) {
		if err := meta.EachListItem(obj, func(o runtime.Object) error { objs = append(objs, o); return nil }); err != nil {
			return err
		}
	} else {
		objs = []runtime.Object{obj}
	}
	for _, o := range objs {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			if u, ok := o.(*unstructured.Unstructured); ok {
				content = u.Object
			} else {
				return err
			}
		}
		cells := make([]string, len(p.Columns))
		for i, c := range p.Columns {
			cells[i] = cell(c.Path, content)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return nil
}

func cell(jp *jsonpath.JSONPath, content map[string]interface{}) string {
	results, err := jp.FindResults(content)
	if err != nil {
		return "<none>"
	}
	var vals []string
	for _, set := range results {
		for _, v := range set {
			if !v.IsValid() || (v.Kind() == reflect.Interface && v.IsNil()) {
				continue
			}
			vals = append(vals, fmt.Sprint(v.Interface()))
		}
	}
	if len(vals) == 0 {
		return "<none>"
	}
	return strings.Join(vals, ",")
}
