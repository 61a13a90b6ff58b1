package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

const source = `package v1

// Policy says when.
// +enum
type Policy string

const (
	PolicyAlways Policy = "Always"
	PolicyNever  Policy = "Never"
	other               = "x"
)

// Thing is a thing.
//
// TODO: drop this.
// +k8s:deepcopy-gen=true
type Thing struct {
	// +optional
	Name string ` + "`json:\"name\"`" + `
	// +required
	Spec string ` + "`json:\"spec,omitempty\"`" + `
	// +listType=map
	// +listMapKey=port
	// +listMapKey=protocol
	Ports []string ` + "`json:\"ports,omitempty\"`" + `
	// A field with nothing reflection cannot see.
	Plain string ` + "`json:\"plain,omitempty\"`" + `
	// +optional
	Opt string ` + "`json:\"opt,omitempty\"`" + `
	// +mapType=atomic
	Selector map[string]string ` + "`json:\"selector,omitempty\"`" + `
	// +default="TCP"
	Protocol string ` + "`json:\"protocol,omitempty\"`" + `
	// +default=ref(Other)
	Ref string ` + "`json:\"ref,omitempty\"`" + `
}

// Ref is owned as a whole.
// +structType=atomic
type Ref struct{}
`

func TestScanPackage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "types.go"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &scan{fields: map[string]marker{}, enumTypes: map[string]bool{}, atomic: map[string]bool{}, consts: map[string][]string{}, typeDocs: map[string]string{}}
	if err := sc.scanPackage("k8s.io/api/example/v1", dir); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  any
		want string
	}{
		{"optional without omitempty", sc.fields["io.k8s.api.example.v1.Thing.name"], "{optional:true required:false listType: listMapKeys:[] mapType: defaultValue:}"},
		{"required with omitempty", sc.fields["io.k8s.api.example.v1.Thing.spec"], "{optional:false required:true listType: listMapKeys:[] mapType: defaultValue:}"},
		{"list map", sc.fields["io.k8s.api.example.v1.Thing.ports"], "{optional:false required:false listType:map listMapKeys:[port protocol] mapType: defaultValue:}"},
		{"atomic map field", sc.fields["io.k8s.api.example.v1.Thing.selector"], "{optional:false required:false listType: listMapKeys:[] mapType:atomic defaultValue:}"},
		{"default", sc.fields["io.k8s.api.example.v1.Thing.protocol"], `{optional:false required:false listType: listMapKeys:[] mapType: defaultValue:"TCP"}`},
		{"nothing to add", len(sc.fields), "5"},
		{"atomic struct type", sc.atomic["io.k8s.api.example.v1.Ref"], "true"},
		{"granular struct type", sc.atomic["io.k8s.api.example.v1.Thing"], "false"},
		{"enum type", sc.enumTypes["io.k8s.api.example.v1.Policy"], "true"},
		{"enum values", sc.consts["io.k8s.api.example.v1.Policy"], "[Always Never]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprintf("%+v", tt.got); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestDescription(t *testing.T) {
	dir := t.TempDir()
	src := "package v1\n\n// Time is\n// a time.\n//\n// Second paragraph.\n// TODO: not this.\n// +marker\ntype Time struct{}\n"
	if err := os.WriteFile(filepath.Join(dir, "time.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &scan{fields: map[string]marker{}, enumTypes: map[string]bool{}, atomic: map[string]bool{}, consts: map[string][]string{}, typeDocs: map[string]string{}}
	if err := sc.scanPackage("k8s.io/apimachinery/pkg/apis/meta/v1", dir); err != nil {
		t.Fatal(err)
	}
	if got, want := sc.typeDocs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"], "Time is a time.\n\nSecond paragraph."; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
}
