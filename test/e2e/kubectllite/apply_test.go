//go:build e2e

package kubectllite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webDeployment is the manifest of deployment web with the given labels
// and container environment entries, so that the versions a test applies
// differ only where the test says.
func webDeployment(labels string, envEntries ...string) string {
	m := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: ` + labels + `
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: busybox
        env:
`
	for _, e := range envEntries {
		m += "        - " + e + "\n"
	}
	return m
}

func TestApplyCreatesThenIsIdempotentThenRemovesDroppedFields(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	deployV1 := webDeployment("{app: web, tier: frontend}", `{name: KEEP, value: "1"}`, `{name: DROP, value: "2"}`)
	// deployV2 drops the tier label and the DROP variable, and adds a label.
	deployV2 := webDeployment("{app: web, track: stable}", `{name: KEEP, value: "1"}`)
	f := writeFile(t, dir, "deploy.yaml", deployV1)

	steps := []struct {
		name, manifest, want string
	}{
		{"first apply creates", deployV1, "deployment.apps/web created\n"},
		{"same file again is unchanged", deployV1, "deployment.apps/web unchanged\n"},
		{"changed file configures", deployV2, "deployment.apps/web configured\n"},
		{"changed file again is unchanged", deployV2, "deployment.apps/web unchanged\n"},
	}
	for _, s := range steps {
		writeFile(t, dir, "deploy.yaml", s.manifest)
		r := mustSucceed(t, "apply", "-n", ns, "-f", f)
		if r.out != s.want {
			t.Fatalf("%s: stdout %q, want %q", s.name, r.out, s.want)
		}
	}
	d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Labels["tier"]; ok {
		t.Errorf("label tier removed from the file is still on the object: %v", d.Labels)
	}
	if d.Labels["track"] != "stable" || d.Labels["app"] != "web" {
		t.Errorf("labels = %v, want app=web track=stable", d.Labels)
	}
	var names []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "KEEP" {
		t.Errorf("env = %v, want only KEEP (DROP was removed from the file)", names)
	}
	if !strings.Contains(d.Annotations["kubectl.kubernetes.io/last-applied-configuration"], `"track":"stable"`) {
		t.Errorf("last-applied annotation does not record the file: %q", d.Annotations["kubectl.kubernetes.io/last-applied-configuration"])
	}
}

func TestApplyKeepsFieldsOthersSet(t *testing.T) {
	ns := namespace(t)
	f := writeFile(t, t.TempDir(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\"}\n")
	mustSucceed(t, "apply", "-n", ns, "-f", f)
	// Someone else adds a key; it is not in the last-applied configuration.
	cm, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["other"] = "x"
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f[:strings.LastIndex(f, "/")], "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"2\"}\n")
	if r := mustSucceed(t, "apply", "-n", ns, "-f", f); r.out != "configmap/c configured\n" {
		t.Fatalf("stdout %q", r.out)
	}
	cm, err = env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "2" || cm.Data["other"] != "x" {
		t.Errorf("data = %v, want a=2 and other=x kept", cm.Data)
	}
}

func TestApplySources(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	multi := writeFile(t, dir, "multi.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: m2}\n")
	writeFile(t, dir, "tree/top.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: top}\n")
	writeFile(t, dir, "tree/sub/deep.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"}}`)

	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"multi-document file", []string{"-f", multi}, "", "configmap/m1 created\nconfigmap/m2 created\n"},
		{"directory without -R", []string{"-f", dir + "/tree"}, "", "configmap/top created\n"},
		{"directory with -R", []string{"-f", dir + "/tree", "-R"}, "", "configmap/deep created\nconfigmap/top unchanged\n"},
		{"stdin", []string{"-f", "-"}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: piped}\n", "configmap/piped created\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectlWith(t, invocation{stdin: tt.stdin}, append([]string{"apply", "-n", ns}, tt.args...)...)
			if r.code != 0 || r.out != tt.want {
				t.Fatalf("got %s\nwant stdout %q", r, tt.want)
			}
		})
	}
}

func TestApplyAndCreateDryRun(t *testing.T) {
	ns := namespace(t)
	f := writeFile(t, t.TempDir(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry}\n")
	tests := []struct {
		verb, mode, want string
	}{
		{"apply", "client", "configmap/dry created (dry run)\n"},
		{"apply", "server", "configmap/dry created (server dry run)\n"},
		{"create", "client", "configmap/dry created (dry run)\n"},
		{"create", "server", "configmap/dry created (server dry run)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.verb+"-"+tt.mode, func(t *testing.T) {
			r := mustSucceed(t, tt.verb, "-n", ns, "-f", f, "--dry-run="+tt.mode)
			if r.out != tt.want {
				t.Fatalf("stdout %q, want %q", r.out, tt.want)
			}
			if _, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("dry run left an object behind (get error %v)", err)
			}
		})
	}
}

func TestApplyServerDryRunOfAChange(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	f := writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\"}\n")
	mustSucceed(t, "apply", "-n", ns, "-f", f)
	writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"2\"}\n")
	for _, mode := range []string{"client", "server"} {
		r := mustSucceed(t, "apply", "-n", ns, "-f", f, "--dry-run="+mode)
		if want := map[string]string{"client": "configmap/c configured (dry run)\n", "server": "configmap/c configured (server dry run)\n"}[mode]; r.out != want {
			t.Fatalf("stdout %q, want %q", r.out, want)
		}
		cm, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["a"] != "1" {
			t.Fatalf("--dry-run=%s changed the object: %v", mode, cm.Data)
		}
	}
}

func TestCreate(t *testing.T) {
	ns := namespace(t)
	f := writeFile(t, t.TempDir(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: once}\n")
	if r := mustSucceed(t, "create", "-n", ns, "-f", f); r.out != "configmap/once created\n" {
		t.Fatalf("stdout %q", r.out)
	}
	r := kubectl(t, "create", "-n", ns, "-f", f)
	want := `Error from server (AlreadyExists): error when creating "` + f + `": configmaps "once" already exists`
	if r.code != 1 || strings.TrimSpace(r.err) != want {
		t.Fatalf("second create: %s\nwant stderr %q", r, want)
	}
}

// As with kubectl, a bad document fails alone: the server refuses an
// unknown or mistyped field or a bad name (apply and create leave field
// validation to it), a kind the server does not serve is reported by the
// RESTMapper, and the documents on both sides are still sent. Only a
// document that cannot be parsed, or has no kind, ends its file there.
func TestBadManifestsFailAlone(t *testing.T) {
	ns := namespace(t)
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n---\n"
	tests := []struct {
		name, bad string
		// wantErr starts stderr, of as many lines; {file} is the file,
		// {ns} the namespace. applyErr, if set, is apply's instead.
		wantErr, applyErr string
		endsFile          bool
	}{
		{"YAML syntax error", "apiVersion: v1\nkind: Pod\nmetadata: {name: p\nspec: {}\n---\n",
			"error: error parsing {file}: error converting YAML to JSON: yaml: line ", "", true},
		{"missing kind", "apiVersion: v1\nmetadata: {name: p}\n---\n",
			`error: error validating "{file}": error validating data: kind not set; if you choose to ignore these errors, turn validation off with --validate=false`, "", true},
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    imagePullPolicyy: Always\n---\n",
			`Error from server (BadRequest): error when creating "{file}": Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagePullPolicyy"`, "", false},
		{"mistyped field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: busybox, ports: [{containerPort: http}]}\n---\n",
			`Error from server (BadRequest): error when creating "{file}": Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32`, "", false},
		{"unknown kind", "apiVersion: v1\nkind: Pood\nmetadata: {name: p}\n---\n",
			`error: resource mapping not found for name: "p" namespace: "" from "{file}": no matches for kind "Pood" in version "v1"` + "\nensure CRDs are installed first", "", false},
		{"unknown group", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: p}\n---\n",
			`error: resource mapping not found for name: "p" namespace: "" from "{file}": no matches for kind "Widget" in version "example.com/v1"` + "\nensure CRDs are installed first", "", false},
		{"invalid name", "apiVersion: v1\nkind: Pod\nmetadata: {name: Not_Valid}\nspec: {containers: [{name: c, image: busybox}]}\n---\n",
			`The Pod "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of`, "", false},
		{"missing name", "apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\nspec: {containers: [{name: c, image: busybox}]}\n---\n",
			`The Pod "" is invalid: metadata.name: Required value: name or generateName is required`,
			"error: error when retrieving current configuration of:\nResource: \"/v1, Resource=pods\", GroupVersionKind: \"/v1, Kind=Pod\"\n" +
				"Name: \"\", Namespace: \"{ns}\"\nfrom server for: \"{file}\": resource name may not be empty", false},
	}
	for i, tt := range tests {
		for _, verb := range []string{"apply", "create"} {
			t.Run(tt.name+"/"+verb, func(t *testing.T) {
				before, after := fmt.Sprintf("before-%d-%s", i, verb), fmt.Sprintf("after-%d-%s", i, verb)
				f := writeFile(t, t.TempDir(), "bad.yaml", fmt.Sprintf(doc, before)+tt.bad+fmt.Sprintf(doc, after))
				r := kubectl(t, verb, "-n", ns, "-f", f)
				if r.code != 1 {
					t.Fatalf("exit code %d, want 1\n%s", r.code, r)
				}
				wantErr := tt.wantErr
				if verb == "apply" && tt.applyErr != "" {
					wantErr = tt.applyErr
				}
				wantErr = strings.NewReplacer("{file}", f, "{ns}", ns).Replace(wantErr)
				if len(lines(r.err)) != len(lines(wantErr)) || !strings.HasPrefix(r.err, wantErr) {
					t.Fatalf("stderr %q, want %d line(s) starting %q", r.err, len(lines(wantErr)), wantErr)
				}
				wantOut := "configmap/" + before + " created\n"
				if !tt.endsFile {
					wantOut += "configmap/" + after + " created\n"
				}
				if r.out != wantOut {
					t.Errorf("stdout %q, want %q", r.out, wantOut)
				}
				for name, want := range map[string]bool{before: true, after: !tt.endsFile} {
					_, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
					if exists := err == nil; exists != want {
						t.Errorf("configmap %s exists = %v (get error %v), want %v", name, exists, err, want)
					}
				}
				if _, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("the bad object exists (get error %v)", err)
				}
			})
		}
	}
}

// As kubectl, apply refuses a document the server is to name (it finds
// objects by name), in kubectl's words, and applies the others.
func TestApplyRefusesGenerateName(t *testing.T) {
	ns := namespace(t)
	f := writeFile(t, t.TempDir(), "gen.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: named}\n")
	r := kubectl(t, "apply", "-n", ns, "-f", f)
	if r.code != 1 || r.out != "configmap/named created\n" || r.err != "error: from gen-: cannot use generate name with apply\n" {
		t.Fatalf("%s", r)
	}
	if got := configMapNames(t, ns); !slices.Equal(got, []string{"named"}) {
		t.Fatalf("configmaps %v, want only the named one", got)
	}
}

// As kubectl, apply warns that an object it changed is being deleted (a
// finalizer holds it), and still changes it.
func TestApplyWarnsOfObjectBeingDeleted(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "held", nil, "kube-lite.test/hold")
	t.Cleanup(func() {
		_, _ = env.cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", "application/merge-patch+json",
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := env.cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, t.TempDir(), "held.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [kube-lite.test/hold]}\ndata: {a: \"1\"}\n")
	r := kubectl(t, "apply", "-n", ns, "-f", f)
	want := "Warning: Detected changes to resource held which is currently being deleted.\n"
	if r.code != 0 || r.out != "configmap/held configured\n" || !strings.HasSuffix(r.err, want) {
		t.Fatalf("%s\nwant stderr ending %q", r, want)
	}
}

// With both, kubectl's create lists the server's refusals before what was
// wrong with the files, and apply the other way round, whatever the order
// of the documents.
func TestFailuresOrder(t *testing.T) {
	ns := namespace(t)
	f := writeFile(t, t.TempDir(), "mixed.yaml", "apiVersion: v1\nkind: Pood\nmetadata: {name: p}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_Valid}\n")
	mapping := []string{`resource mapping not found for name: "p" namespace: "" from "` + f + `": no matches for kind "Pood" in version "v1"`,
		"ensure CRDs are installed first"}
	refused := []string{`Error from server (Invalid): error when creating "` + f + `": ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": `}
	for verb, want := range map[string][]string{"create": append(refused, mapping...), "apply": append(mapping, refused...)} {
		t.Run(verb, func(t *testing.T) {
			r := kubectl(t, verb, "-n", ns, "-f", f)
			got := lines(r.err)
			if r.code != 1 || len(got) != len(want) {
				t.Fatalf("want exit 1 and stderr %q\n%s", want, r)
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Fatalf("stderr line %d is %q, want it to start %q\n%s", i+1, got[i], want[i], r)
				}
			}
		})
	}
}

func TestValidateModes(t *testing.T) {
	ns := namespace(t)
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndataa: {x: y}\n"
	tests := []struct {
		mode     string
		wantCode int
		wantErr  string
	}{
		{"strict", 1, `unknown field "dataa"`},
		{"warn", 0, `Warning: unknown field "dataa"`},
		{"ignore", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			name := "v-" + tt.mode
			f := writeFile(t, t.TempDir(), "cm.yaml", fmt.Sprintf(manifest, name))
			r := kubectl(t, "apply", "-n", ns, "-f", f, "--validate="+tt.mode)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.wantCode, r)
			}
			if tt.wantErr == "" && strings.Contains(r.err, "dataa") {
				t.Errorf("--validate=ignore still reported: %q", r.err)
			}
			if tt.wantErr != "" && !strings.Contains(r.err, tt.wantErr) {
				t.Errorf("stderr %q, want %q", r.err, tt.wantErr)
			}
			if tt.mode == "warn" && strings.Count(r.err, "unknown field") != 1 {
				t.Errorf("the warning is printed %d times, want once: %q", strings.Count(r.err, "unknown field"), r.err)
			}
			_, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
			if created := err == nil; created != (tt.wantCode == 0) {
				t.Errorf("object created = %v (get error %v), want %v", created, err, tt.wantCode == 0)
			}
		})
	}
	t.Run("warn", func(t *testing.T) {
		// As kubectl: warn leaves a List's items to the server too (one
		// warning, the server's), but a document without a kind is
		// still refused.
		dir := t.TempDir()
		list := writeFile(t, dir, "list.yaml", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: v-item}, dataa: {}}\n")
		r := kubectl(t, "create", "-n", ns, "-f", list, "--validate=warn")
		if r.code != 0 || r.err != `Warning: unknown field "dataa"`+"\n" {
			t.Fatalf("a List's item: %s", r)
		}
		noKind := writeFile(t, dir, "nokind.yaml", "apiVersion: v1\nmetadata: {name: v-nokind}\n")
		r = kubectl(t, "apply", "-n", ns, "-f", noKind, "--validate=warn")
		want := `error: error validating "` + noKind + `": error validating data: kind not set; if you choose to ignore these errors, turn validation off with --validate=false` + "\n"
		if r.code != 1 || r.err != want {
			t.Fatalf("no kind: %s\nwant stderr %q", r, want)
		}
	})
}

// -o yaml|json prints the objects instead of the "created" lines: apply
// prints them once at the end (a List for several), create one by one;
// that is how manifests are generated with --dry-run=client -o yaml.
func TestApplyAndCreatePrintObjects(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	two := writeFile(t, dir, "two.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {a: \"1\"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n")
	one := writeFile(t, dir, "one.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {a: \"2\"}\n")

	r := mustSucceed(t, "create", "-n", ns, "-f", two, "--dry-run=client", "-o", "yaml")
	if !strings.HasPrefix(r.out, "apiVersion: v1\ndata:\n  a: \"1\"\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: "+ns+"\n---\n") ||
		!strings.HasSuffix(r.out, "name: two\n  namespace: "+ns+"\n") {
		t.Fatalf("create --dry-run=client -o yaml:\n%s", r.out)
	}
	r = mustSucceed(t, "apply", "-n", ns, "-f", two, "-o", "json")
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name        string            `json:"name"`
				UID         string            `json:"uid"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 || !strings.HasPrefix(r.out, "{\n    \"kind\": \"List\",\n    \"apiVersion\": \"v1\",") {
		t.Fatalf("apply -o json of two objects (%v):\n%s", err, r.out)
	}
	for _, it := range list.Items {
		if it.Metadata.UID == "" || it.Metadata.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
			t.Fatalf("apply -o json should print the created objects: %+v", it.Metadata)
		}
	}
	// A client dry run of a change prints the object as patched, unsaved.
	r = mustSucceed(t, "apply", "-n", ns, "-f", one, "--dry-run=client", "-o", "jsonpath={.data.a}")
	if r.out != "2" {
		t.Fatalf("apply --dry-run=client -o jsonpath: %q", r.out)
	}
	r = mustSucceed(t, "apply", "-n", ns, "-f", two, "-o", "name")
	if r.out != "configmap/one\nconfigmap/two\n" {
		t.Fatalf("apply -o name: %q", r.out)
	}
	r = kubectl(t, "apply", "-n", ns, "-f", two, "-o", "bogus")
	if r.code != 1 || !strings.HasPrefix(r.err, `error: unable to match a printer suitable for the output format "bogus"`) {
		t.Fatalf("%s", r)
	}
	// As kubectl, a failed apply prints none of the objects -o asked for,
	// not even the one it applied before the bad document.
	bad := writeFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: three}\n---\nkind: [\n")
	r = kubectl(t, "apply", "-n", ns, "-f", bad, "-o", "yaml")
	if r.code != 1 || r.out != "" || !strings.Contains(r.err, "error parsing") {
		t.Fatalf("apply -o yaml with a bad document: %s", r)
	}
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "three", metav1.GetOptions{}); err != nil {
		t.Fatalf("the document before the bad one: %v", err)
	}
}

// One object the server refuses does not stop the others, and every
// failure is reported; apply creating an object says "creating".
func TestApplyAndCreateContinuePastErrors(t *testing.T) {
	ns := namespace(t)
	f := writeFile(t, t.TempDir(), "m.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: no-such-ns}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: "+ns+"}\n")
	r := kubectl(t, "apply", "-f", f)
	want := `Error from server (NotFound): error when creating "` + f + `": namespaces "no-such-ns" not found` + "\n"
	if r.code != 1 || r.out != "configmap/b created\n" || r.err != want {
		t.Fatalf("%s\nwant stderr %q", r, want)
	}
	r = kubectl(t, "create", "-f", f)
	if r.code != 1 || r.out != "" || len(lines(r.err)) != 2 || !strings.Contains(r.err, `configmaps "b" already exists`) {
		t.Fatalf("%s", r)
	}
}

// An object made by create has no last-applied annotation: apply warns,
// as kubectl does, unless create --save-config recorded it.
func TestApplyWarnsOfAMissingAnnotation(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	plain := writeFile(t, dir, "plain.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n")
	saved := writeFile(t, dir, "saved.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: saved}\n")
	mustSucceed(t, "create", "-n", ns, "-f", plain)
	mustSucceed(t, "create", "-n", ns, "-f", saved, "--save-config")
	r := mustSucceed(t, "apply", "-n", ns, "-f", plain)
	if !strings.HasPrefix(r.err, "Warning: resource configmaps/plain is missing the kubectl.kubernetes.io/last-applied-configuration annotation which is required by kubectl-lite apply.") {
		t.Fatalf("%s", r)
	}
	if r := mustSucceed(t, "apply", "-n", ns, "-f", saved); r.err != "" || r.out != "configmap/saved unchanged\n" {
		t.Fatalf("after create --save-config: %s", r)
	}
}

// kubectl's generators: `create deployment ... --dry-run=client -o yaml`
// writes a manifest without the server, and without --dry-run creates.
func TestCreateGenerators(t *testing.T) {
	ns := namespace(t)
	r := mustSucceed(t, "create", "deployment", "web", "--image=busybox:1", "-n", ns, "--dry-run=client", "-o", "yaml")
	want := `apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    app: web
  name: web
  namespace: ` + ns + `
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  strategy: {}
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - image: busybox:1
        name: busybox
        resources: {}
status: {}
`
	if r.out != want {
		t.Fatalf("create deployment --dry-run=client -o yaml:\n%s\nwant:\n%s", r.out, want)
	}
	if r := mustSucceed(t, "create", "configmap", "settings", "--from-literal=mode=fast", "-n", ns); r.out != "configmap/settings created\n" {
		t.Fatalf("stdout %q", r.out)
	}
	cm, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil || cm.Data["mode"] != "fast" {
		t.Fatalf("configmap %v (%v)", cm.Data, err)
	}
	r = kubectl(t, "create", "deployment", "web", "-n", ns)
	if r.code != 1 || r.err != "error: required flag(s) \"image\" not set\n" {
		t.Fatalf("%s", r)
	}
}

// TestApplyLastAppliedSubcommands: apply's view-last-applied and
// set-last-applied exist, and --field-manager is taken, as with kubectl.
func TestApplyLastAppliedSubcommands(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	one := writeFile(t, dir, "one.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: la}\ndata: {a: \"1\"}\n")
	two := writeFile(t, dir, "two.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: la}\ndata: {a: \"2\"}\n")
	if r := mustSucceed(t, "apply", "-n", ns, "-f", one, "--field-manager=me"); r.out != "configmap/la created\n" {
		t.Fatalf("%s", r)
	}
	want := "apiVersion: v1\ndata:\n  a: \"1\"\nkind: ConfigMap\nmetadata:\n  annotations: {}\n  name: la\n  namespace: " + ns + "\n"
	if r := mustSucceed(t, "apply", "view-last-applied", "-n", ns, "configmap/la"); r.out != want {
		t.Fatalf("%s\nwant stdout %q", r, want)
	}
	if r := mustSucceed(t, "apply", "set-last-applied", "-n", ns, "-f", two); r.out != "configmap/la configured\n" {
		t.Fatalf("%s", r)
	}
	if r := mustSucceed(t, "apply", "view-last-applied", "-n", ns, "configmap/la"); !strings.Contains(r.out, "a: \"2\"") {
		t.Fatalf("set-last-applied did not record the file: %s", r)
	}
	r := kubectl(t, "apply", "view-last-applied", "-n", ns, "configmap/nope")
	if r.code != 1 || r.err != `Error from server (NotFound): configmaps "nope" not found`+"\n" {
		t.Fatalf("%s", r)
	}
}

// A change the server refuses as invalid (an immutable ConfigMap's data)
// fails as a patch; with --force, as kubectl, the object is deleted and
// created again from the file. --overwrite=false refuses any change made
// since the last apply, and --force next to --dry-run=server is refused.
func TestApplyForceAndOverwrite(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	manifest := func(v string) string {
		return writeFile(t, dir, v+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: imm}\nimmutable: true\ndata: {a: \""+v+"\"}\n")
	}
	one, two := manifest("1"), manifest("2")
	mustSucceed(t, "apply", "-n", ns, "-f", one)
	before, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "imm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := kubectl(t, "apply", "-n", ns, "-f", two); r.code != 1 || !strings.Contains(r.err, "field is immutable") {
		t.Fatalf("patching an immutable field: %s", r)
	}
	if r := kubectl(t, "apply", "-n", ns, "-f", two, "--overwrite=false"); r.code != 1 || !strings.HasPrefix(r.err, "error: error when applying patch:\n\nto:\n") || !strings.Contains(r.err, "conflicts with changes made from original to current") {
		t.Fatalf("--overwrite=false: %s", r)
	}
	if r := kubectl(t, "apply", "-n", ns, "-f", two, "--force", "--dry-run=server"); r.code != 1 || r.err != "error: --dry-run=server cannot be used with --force\n" {
		t.Fatalf("--force --dry-run=server: %s", r)
	}
	if r := mustSucceed(t, "apply", "-n", ns, "-f", two, "--force", "--wait"); r.out != "configmap/imm configured\n" {
		t.Fatalf("--force: %s", r)
	}
	after, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "imm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Data["a"] != "2" || after.UID == before.UID {
		t.Fatalf("after --force: data %v, uid %s (was %s)", after.Data, after.UID, before.UID)
	}
	if r := mustSucceed(t, "apply", "-n", ns, "-f", two, "--overwrite=false"); r.out != "configmap/imm unchanged\n" {
		t.Fatalf("--overwrite=false, nothing changed: %s", r)
	}
}

// apply --prune -l deletes, as kubectl, the objects apply made that match
// the selector and are no longer in the files; objects made otherwise are
// kept, and --prune without -l or --all is refused.
func TestApplyPrune(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, labels: {app: pr}}\n"
	both := writeFile(t, dir, "both.yaml", fmt.Sprintf(cm, "pa")+"---\n"+fmt.Sprintf(cm, "pb"))
	one := writeFile(t, dir, "one.yaml", fmt.Sprintf(cm, "pa"))
	mustSucceed(t, "apply", "-n", ns, "-f", both)
	createConfigMap(t, ns, "other", map[string]string{"app": "pr"})

	if r := kubectl(t, "apply", "-n", ns, "-f", one, "--prune"); r.code != 1 || !strings.HasPrefix(r.err, "error: all resources selected for prune without explicitly passing --all.") {
		t.Fatalf("--prune alone: %s", r)
	}
	if r := kubectl(t, "apply", "-n", ns, "-f", one, "--prune", "-l", "app=pr", "--prune-allowlist=v1/ConfigMap"); r.code != 1 || r.err != "error: invalid GroupVersionKind format: v1/ConfigMap, please follow <group/version/kind>\n" {
		t.Fatalf("a bad allowlist: %s", r)
	}
	args := []string{"apply", "-n", ns, "-f", one, "--prune", "-l", "app=pr", "--prune-allowlist=core/v1/ConfigMap"}
	if r := mustSucceed(t, append(args, "--dry-run=client")...); r.out != "configmap/pa unchanged (dry run)\nconfigmap/pb pruned (dry run)\n" {
		t.Fatalf("--prune --dry-run=client: %s", r)
	}
	if r := mustSucceed(t, args...); r.out != "configmap/pa unchanged\nconfigmap/pb pruned\n" {
		t.Fatalf("--prune: %s", r)
	}
	for name, want := range map[string]bool{"pa": true, "pb": false, "other": true} {
		_, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if want && err != nil || !want && !apierrors.IsNotFound(err) {
			t.Errorf("after --prune, configmap %s: %v", name, err)
		}
	}
}

// apply and create take kubectl's -k: the objects a kustomization builds.
func TestApplyAndCreateKustomize(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	writeFile(t, dir, "kustomization.yaml", "namespace: "+ns+"\nresources:\n- cm.yaml\n")
	writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kz}\n")
	if r := mustSucceed(t, "create", "-k", dir); r.out != "configmap/kz created\n" {
		t.Fatalf("create -k: %s", r)
	}
	if r := mustSucceed(t, "apply", "-k", dir); r.out != "configmap/kz configured\n" {
		t.Fatalf("apply -k: %s", r)
	}
	if r := kubectl(t, "apply", "-k", dir, "-f", filepath.Join(dir, "cm.yaml")); r.code != 1 || r.err != "error: only one of -f or -k can be specified\n" {
		t.Fatalf("-k with -f: %s", r)
	}
}
