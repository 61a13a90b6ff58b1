// Command genmarkers writes the tables of what upstream's openapi-gen reads
// from comments in k8s.io/api and that reflection cannot see: field markers
// (+optional, +required, +listType, +listMapKey, +mapType, +structType), the
// types marked atomic (+structType=atomic, +mapType=atomic), the values of +enum types,
// and the descriptions of apimachinery's special types, which have no
// SwaggerDoc method. Run it through `go generate` in pkg/apiserver/openapi
// after bumping k8s.io/api.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// scan is everything collected from the sources, keyed by definition name.
type scan struct {
	fields    map[string]marker   // definition.jsonName
	enumTypes map[string]bool     // definitions marked +enum
	atomic    map[string]bool     // definitions marked +structType=atomic or +mapType=atomic
	consts    map[string][]string // definition → string constants of that type
	typeDocs  map[string]string   // definition → doc, for docTypes only
}

// docTypes are the special types whose description comes from the Go doc
// comment because they lack a SwaggerDoc method.
func docTypes() map[string]bool {
	return map[string]bool{
		"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       true,
		"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":  true,
		"io.k8s.apimachinery.pkg.apis.meta.v1.Duration":   true,
		"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1":   true,
		"io.k8s.apimachinery.pkg.api.resource.Quantity":   true,
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString": true,
		"io.k8s.apimachinery.pkg.runtime.RawExtension":    true,
	}
}

type marker struct {
	optional, required bool
	listType           string
	listMapKeys        []string
	// mapType is a map or struct field's +mapType or +structType.
	mapType string
	// defaultValue is a field's +default, a JSON value (references to
	// constants, +default=ref(...), are left out).
	defaultValue string
}

func main() {
	out := flag.String("o", "markers_generated.go", "output file")
	flag.Parse()
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func run(out string) error {
	apiDir, err := moduleDir("k8s.io/api")
	if err != nil {
		return err
	}
	machDir, err := moduleDir("k8s.io/apimachinery")
	if err != nil {
		return err
	}
	pkgs := map[string]string{ // import path → directory
		"k8s.io/apimachinery/pkg/apis/meta/v1": filepath.Join(machDir, "pkg/apis/meta/v1"),
		"k8s.io/apimachinery/pkg/api/resource": filepath.Join(machDir, "pkg/api/resource"),
		"k8s.io/apimachinery/pkg/util/intstr":  filepath.Join(machDir, "pkg/util/intstr"),
		"k8s.io/apimachinery/pkg/runtime":      filepath.Join(machDir, "pkg/runtime"),
	}
	typesFiles, err := filepath.Glob(filepath.Join(apiDir, "*", "*", "types.go"))
	if err != nil {
		return err
	}
	for _, f := range typesFiles {
		dir := filepath.Dir(f)
		rel, err := filepath.Rel(apiDir, dir)
		if err != nil {
			return err
		}
		pkgs["k8s.io/api/"+filepath.ToSlash(rel)] = dir
	}

	sc := &scan{fields: map[string]marker{}, enumTypes: map[string]bool{}, atomic: map[string]bool{}, consts: map[string][]string{}, typeDocs: map[string]string{}}
	for importPath, dir := range pkgs {
		if err := sc.scanPackage(importPath, dir); err != nil {
			return err
		}
	}
	return sc.write(out)
}

func moduleDir(mod string) (string, error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		return "", fmt.Errorf("locate %s: %w", mod, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// definitionPrefix mirrors definitionName in the openapi package.
func definitionPrefix(importPath string) string {
	parts := strings.Split(importPath, "/")
	domain := strings.Split(parts[0], ".")
	for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
		domain[i], domain[j] = domain[j], domain[i]
	}
	parts[0] = strings.Join(domain, ".")
	return strings.Join(parts, ".")
}

func (sc *scan) scanPackage(importPath, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	prefix := definitionPrefix(importPath) + "."
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.Contains(filepath.Base(path), "generated") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			switch gd.Tok {
			case token.TYPE:
				for _, spec := range gd.Specs {
					sc.scanType(prefix, gd, spec.(*ast.TypeSpec))
				}
			case token.CONST:
				for _, spec := range gd.Specs {
					sc.scanConst(prefix, spec.(*ast.ValueSpec))
				}
			}
		}
	}
	return nil
}

func (sc *scan) scanType(prefix string, gd *ast.GenDecl, ts *ast.TypeSpec) {
	if !ts.Name.IsExported() {
		return
	}
	name := prefix + ts.Name.Name
	doc := ts.Doc
	if doc == nil && len(gd.Specs) == 1 {
		doc = gd.Doc
	}
	if doc != nil {
		for _, c := range doc.List {
			switch strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) {
			case "+enum":
				sc.enumTypes[name] = true
			case "+structType=atomic", "+mapType=atomic":
				sc.atomic[name] = true
			}
		}
		if docTypes()[name] {
			sc.typeDocs[name] = description(doc)
		}
	}
	if st, ok := ts.Type.(*ast.StructType); ok {
		for _, field := range st.Fields.List {
			scanField(name, field, sc.fields)
		}
	}
}

func (sc *scan) scanConst(prefix string, vs *ast.ValueSpec) {
	typ, ok := vs.Type.(*ast.Ident)
	if !ok || len(vs.Values) != len(vs.Names) {
		return
	}
	for _, v := range vs.Values {
		lit, ok := v.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		value, err := strconv.Unquote(lit.Value)
		if err != nil {
			continue
		}
		sc.consts[prefix+typ.Name] = append(sc.consts[prefix+typ.Name], value)
	}
}

// description renders a doc comment as openapi-gen does: lines of a
// paragraph joined by spaces, paragraphs by a blank line, markers and TODOs
// dropped.
func description(doc *ast.CommentGroup) string {
	var paragraphs []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paragraphs = append(paragraphs, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, c := range doc.List {
		line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "+"), strings.HasPrefix(line, "TODO"):
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return strings.Join(paragraphs, "\n\n")
}

func scanField(typeName string, field *ast.Field, entries map[string]marker) {
	if len(field.Names) == 0 || field.Tag == nil || field.Doc == nil {
		return
	}
	tagValue, err := strconv.Unquote(field.Tag.Value)
	if err != nil {
		return
	}
	jsonTag := reflect.StructTag(tagValue).Get("json")
	name, opts, _ := strings.Cut(jsonTag, ",")
	if name == "" || name == "-" {
		return
	}
	var m marker
	for _, c := range field.Doc.List {
		line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		switch {
		case line == "+optional":
			m.optional = true
		case line == "+required":
			m.required = true
		case strings.HasPrefix(line, "+listType="):
			m.listType = strings.TrimPrefix(line, "+listType=")
		case strings.HasPrefix(line, "+listMapKey="):
			m.listMapKeys = append(m.listMapKeys, strings.TrimPrefix(line, "+listMapKey="))
		case strings.HasPrefix(line, "+mapType="):
			m.mapType = strings.TrimPrefix(line, "+mapType=")
		case strings.HasPrefix(line, "+structType="):
			m.mapType = strings.TrimPrefix(line, "+structType=")
		case strings.HasPrefix(line, "+default=") && !strings.HasPrefix(line, "+default=ref("):
			m.defaultValue = strings.TrimPrefix(line, "+default=")
		}
	}
	omitempty := strings.Contains(opts, "omitempty")
	// Only what differs from the json tag's own answer is worth a row.
	if omitempty {
		m.optional = false
	} else {
		m.required = false
	}
	if !m.optional && !m.required && m.listType == "" && m.listMapKeys == nil && m.mapType == "" && m.defaultValue == "" {
		return
	}
	entries[typeName+"."+name] = m
}

func (sc *scan) write(out string) error {
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/genmarkers; DO NOT EDIT.\n\npackage openapi\n\n")

	b.WriteString("// commentMarkers returns the markers k8s.io/api declares in comments on\n// the field key (definition name, dot, json name).\n")
	b.WriteString("func commentMarkers(key string) (fieldMarkers, bool) {\n\tswitch key {\n")
	for _, k := range sortedKeys(sc.fields) {
		m := sc.fields[k]
		var parts []string
		if m.optional {
			parts = append(parts, "optional: true")
		}
		if m.required {
			parts = append(parts, "required: true")
		}
		if m.listType != "" {
			parts = append(parts, fmt.Sprintf("listType: %q", m.listType))
		}
		if len(m.listMapKeys) > 0 {
			parts = append(parts, fmt.Sprintf("listMapKeys: %#v", m.listMapKeys))
		}
		if m.mapType != "" {
			parts = append(parts, fmt.Sprintf("mapType: %q", m.mapType))
		}
		if m.defaultValue != "" {
			parts = append(parts, fmt.Sprintf("defaultValue: %q", m.defaultValue))
		}
		fmt.Fprintf(&b, "\tcase %q:\n\t\treturn fieldMarkers{%s}, true\n", k, strings.Join(parts, ", "))
	}
	b.WriteString("\t}\n\treturn fieldMarkers{}, false\n}\n\n")

	b.WriteString("// enumValues returns the values of a type marked +enum, in source order.\n")
	b.WriteString("func enumValues(definition string) []string {\n\tswitch definition {\n")
	for _, k := range sortedKeys(sc.enumTypes) {
		if len(sc.consts[k]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\tcase %q:\n\t\treturn %#v\n", k, sc.consts[k])
	}
	b.WriteString("\t}\n\treturn nil\n}\n\n")

	b.WriteString("// atomicType reports whether a definition is marked +structType=atomic or\n// +mapType=atomic: it is owned and replaced as a whole.\n")
	b.WriteString("func atomicType(definition string) bool {\n\tswitch definition {\n")
	if keys := sortedKeys(sc.atomic); len(keys) > 0 {
		fmt.Fprintf(&b, "\tcase %s:\n\t\treturn true\n", quoteAll(keys))
	}
	b.WriteString("\t}\n\treturn false\n}\n\n")

	b.WriteString("// typeDoc returns the description of a special type without SwaggerDoc.\n")
	b.WriteString("func typeDoc(definition string) string {\n\tswitch definition {\n")
	for _, k := range sortedKeys(sc.typeDocs) {
		fmt.Fprintf(&b, "\tcase %q:\n\t\treturn %q\n", k, sc.typeDocs[k])
	}
	b.WriteString("\t}\n\treturn \"\"\n}\n")

	src, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("format: %w", err)
	}
	return os.WriteFile(out, src, 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ",\n\t\t")
}
