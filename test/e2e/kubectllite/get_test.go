//go:build e2e

package kubectllite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// createPod creates a pending pod with one busybox container.
func createPod(t *testing.T, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	p, err := env.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return p
}

// runPod plays the scheduler and the kubelet: binds the pod to node and
// reports it Running and Ready with an IP.
func runPod(t *testing.T, ns, name, node, ip string) {
	t.Helper()
	ctx := context.Background()
	if node != "" {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := env.cs.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s: %v", name, err)
		}
	}
	p, err := env.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, HostIP: map[bool]string{true: "127.0.0.1"}[node != ""], PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	if _, err := env.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating status of %s: %v", name, err)
	}
}

func TestGetTables(t *testing.T) {
	ns := namespace(t)
	createPod(t, ns, "alpha", map[string]string{"app": "web", "tier": "fe"})
	createPod(t, ns, "beta", map[string]string{"app": "db"})
	runPod(t, ns, "beta", "", "10.244.0.7")
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		wantHeader []string
		wantRows   [][]string // leading cells of each row, in order
	}{
		{"pods", []string{"get", "pods"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
			[][]string{{"alpha", "0/1", "Pending", "0"}, {"beta", "1/1", "Running", "0"}}},
		{"wide", []string{"get", "pods", "-o", "wide"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"},
			[][]string{{"alpha", "0/1", "Pending", "0"}, {"beta", "1/1", "Running", "0"}}},
		{"label selector", []string{"get", "pods", "-l", "app=web"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, [][]string{{"alpha"}}},
		{"field selector", []string{"get", "pods", "--field-selector", "status.phase=Running"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, [][]string{{"beta", "1/1", "Running"}}},
		{"type and name", []string{"get", "pod", "beta"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, [][]string{{"beta"}}},
		{"type/name", []string{"get", "pods/alpha"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, [][]string{{"alpha"}}},
		{"short name", []string{"get", "po", "alpha"},
			[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, [][]string{{"alpha"}}},
		{"no headers", []string{"get", "pods", "--no-headers"},
			nil, [][]string{{"alpha"}, {"beta"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append(tt.args, "-n", ns)...)
			rows := table(r.out)
			if tt.wantHeader != nil {
				if len(rows) == 0 || !reflect.DeepEqual(rows[0], tt.wantHeader) {
					t.Fatalf("header %v, want %v\n%s", rows, tt.wantHeader, r.out)
				}
				rows = rows[1:]
			}
			if len(rows) != len(tt.wantRows) {
				t.Fatalf("%d rows, want %d:\n%s", len(rows), len(tt.wantRows), r.out)
			}
			for i, want := range tt.wantRows {
				if !reflect.DeepEqual(rows[i][:len(want)], want) {
					t.Errorf("row %d = %v, want it to start with %v", i, rows[i], want)
				}
			}
		})
	}

	t.Run("wide shows the pod IP", func(t *testing.T) {
		r := mustSucceed(t, "get", "pod", "beta", "-n", ns, "-o", "wide")
		if rows := table(r.out); len(rows) != 2 || rows[1][5] != "10.244.0.7" {
			t.Fatalf("IP column: %q", r.out)
		}
	})
	t.Run("show labels", func(t *testing.T) {
		r := mustSucceed(t, "get", "pods", "-n", ns, "--show-labels")
		rows := table(r.out)
		if rows[0][len(rows[0])-1] != "LABELS" || rows[1][len(rows[1])-1] != "app=web,tier=fe" || rows[2][len(rows[2])-1] != "app=db" {
			t.Fatalf("labels column:\n%s", r.out)
		}
	})
	t.Run("sort by", func(t *testing.T) {
		// alpha has app=web, beta app=db: by that label beta comes first.
		r := mustSucceed(t, "get", "pods", "-n", ns, "--sort-by=.metadata.labels.app")
		if rows := table(r.out); len(rows) != 3 || rows[1][0] != "beta" || rows[2][0] != "alpha" {
			t.Fatalf("table sorted by app:\n%s", r.out)
		}
		r = mustSucceed(t, "get", "pods", "-n", ns, "--sort-by={.metadata.labels.app}", "-o", "name")
		if r.out != "pod/beta\npod/alpha\n" {
			t.Fatalf("names sorted by app: %q", r.out)
		}
		r = kubectl(t, "get", "pods", "-n", ns, "--sort-by=.spec.nothing")
		if r.code != 1 || !strings.Contains(r.err, "couldn't find any field with path") {
			t.Fatalf("sort by a missing field: %s", r)
		}
	})
	t.Run("label columns", func(t *testing.T) {
		r := mustSucceed(t, "get", "pods", "-n", ns, "-L", "app", "-L", "tier")
		rows := table(r.out)
		n := len(rows[0])
		if rows[0][n-2] != "APP" || rows[0][n-1] != "TIER" || rows[1][n-2] != "web" || rows[1][n-1] != "fe" || rows[2][len(rows[2])-1] != "db" {
			t.Fatalf("label columns:\n%s", r.out)
		}
	})
	t.Run("all namespaces", func(t *testing.T) {
		r := mustSucceed(t, "get", "pods", "-A")
		rows := table(r.out)
		if rows[0][0] != "NAMESPACE" || rows[0][1] != "NAME" {
			t.Fatalf("header %v", rows[0])
		}
		found := 0
		for _, row := range rows[1:] {
			if row[0] == ns && (row[1] == "alpha" || row[1] == "beta") {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("-A lists %d of our 2 pods:\n%s", found, r.out)
		}
	})
	t.Run("all namespaces of a cluster-scoped kind", func(t *testing.T) {
		// Namespaces have no namespace: kubectl prints no NAMESPACE column
		// for them, not an empty one.
		r := mustSucceed(t, "get", "namespaces", "-A")
		rows := table(r.out)
		if rows[0][0] != "NAME" || rows[0][1] != "STATUS" {
			t.Fatalf("header %v, want NAME STATUS AGE:\n%s", rows[0], r.out)
		}
		r = mustSucceed(t, "get", "namespaces,pods", "-A")
		blocks := strings.Split(strings.TrimSpace(r.out), "\n\n")
		if len(blocks) != 2 || !strings.HasPrefix(blocks[0], "NAME ") || !strings.HasPrefix(blocks[1], "NAMESPACE ") {
			t.Fatalf("namespaces without, pods with a NAMESPACE column:\n%s", r.out)
		}
	})
	t.Run("several types", func(t *testing.T) {
		r := mustSucceed(t, "get", "pods,configmaps", "-n", ns)
		blocks := strings.Split(strings.TrimSpace(r.out), "\n\n")
		if len(blocks) != 2 {
			t.Fatalf("want two tables separated by a blank line:\n%s", r.out)
		}
		if rows := table(blocks[0]); len(rows) != 3 || rows[1][0] != "pod/alpha" || rows[2][0] != "pod/beta" {
			t.Errorf("pods table:\n%s", blocks[0])
		}
		if rows := table(blocks[1]); len(rows) != 2 || rows[0][0] != "NAME" || rows[0][1] != "DATA" || rows[1][0] != "configmap/settings" {
			t.Errorf("configmaps table:\n%s", blocks[1])
		}
		// Laid out on its own widths, not the pods table's (READY is wider than DATA).
		if hdr := strings.SplitN(blocks[1], "\n", 2)[0]; hdr != "NAME                 DATA   AGE" {
			t.Errorf("configmaps header %q, want its own column widths", hdr)
		}
	})
	t.Run("type/name of two types", func(t *testing.T) {
		r := mustSucceed(t, "get", "pod/alpha", "configmap/settings", "-n", ns, "-o", "name")
		if r.out != "pod/alpha\nconfigmap/settings\n" {
			t.Fatalf("stdout %q", r.out)
		}
	})
}

func TestGetOutputFormats(t *testing.T) {
	ns := namespace(t)
	createPod(t, ns, "alpha", map[string]string{"app": "web"})
	createPod(t, ns, "beta", nil)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"name", []string{"-o", "name"}, "pod/alpha\npod/beta\n"},
		{"jsonpath on a list", []string{"-o", "jsonpath={.items[*].metadata.name}"}, "alpha beta"},
		{"jsonpath on one object", []string{"alpha", "-o", "jsonpath={.metadata.labels.app}"}, "web"},
		{"custom columns", []string{"-o", "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[*].image,APP:.metadata.labels.app"},
			"NAME    IMAGE     APP\nalpha   busybox   web\nbeta    busybox   <none>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"get", "pods", "-n", ns}, tt.args...)...)
			if r.out != tt.want {
				t.Fatalf("stdout %q, want %q", r.out, tt.want)
			}
		})
	}

	t.Run("json list", func(t *testing.T) {
		r := mustSucceed(t, "get", "pods", "-n", ns, "-o", "json")
		var list corev1.PodList
		if err := json.Unmarshal([]byte(r.out), &list); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.out)
		}
		if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Name != "alpha" {
			t.Fatalf("list kind %q with %d items", list.Kind, len(list.Items))
		}
	})
	t.Run("yaml round trip", func(t *testing.T) {
		r := mustSucceed(t, "get", "pod", "alpha", "-n", ns, "-o", "yaml")
		var got corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(r.out), &got); err != nil {
			t.Fatalf("not a Pod in YAML: %v\n%s", err, r.out)
		}
		want, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), "alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.APIVersion != "v1" || got.Kind != "Pod" {
			t.Errorf("apiVersion/kind = %q/%q", got.APIVersion, got.Kind)
		}
		got.TypeMeta = want.TypeMeta
		if len(got.ManagedFields) > 0 || len(want.ManagedFields) == 0 {
			t.Errorf("-o yaml shows %d managedFields entries of the object's %d; as kubectl's, it hides them", len(got.ManagedFields), len(want.ManagedFields))
		}
		want.ManagedFields = nil
		if !reflect.DeepEqual(&got, want) {
			t.Fatalf("-o yaml differs from the API object (managedFields aside):\n%s", r.out)
		}
		// The printed YAML is a valid manifest: applying it changes nothing
		// the user can see.
		f := writeFile(t, t.TempDir(), "alpha.yaml", r.out)
		if a := mustSucceed(t, "apply", "-n", ns, "-f", f); a.out != "pod/alpha configured\n" {
			t.Fatalf("applying -o yaml output: %q", a.out)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		r := kubectl(t, "get", "pods", "-n", ns, "-o", "bogus")
		if r.code != 1 || !strings.Contains(r.err, `output format "bogus"`) {
			t.Fatalf("%s", r)
		}
	})
}

func TestGetErrors(t *testing.T) {
	ns := namespace(t)
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "there"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"
	thereAndMissing := writeFile(t, dir, "two.yaml", fmt.Sprintf(cm, "there")+"---\n"+fmt.Sprintf(cm, "missing"))
	badYAML := writeFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n")
	tests := []struct {
		name    string
		args    []string
		code    int
		wantOut string
		wantErr string
	}{
		{"not found", []string{"get", "pod", "nope"}, 1, "", `Error from server (NotFound): pods "nope" not found` + "\n"},
		{"empty namespace", []string{"get", "pods"}, 0, "", "No resources found in " + ns + " namespace.\n"},
		{"unknown type", []string{"get", "widgets"}, 1, "", `error: the server doesn't have a resource type "widgets"` + "\n"},
		{"no type", []string{"get"}, 1, "", "error: you must specify the type of resource to get. Use \"kubectl-lite api-resources\" for a complete list of supported resources\n"},
		{"--ignore-not-found", []string{"get", "pod", "nope", "--ignore-not-found"}, 0, "", ""},
		{"--ignore-not-found -o yaml", []string{"get", "pod", "nope", "--ignore-not-found", "-o", "yaml"}, 0, "", ""},
		{"--ignore-not-found, empty list", []string{"get", "pods", "--ignore-not-found"}, 0, "", ""},
		// The template's own error, not a list of formats.
		{"bad jsonpath", []string{"get", "pods", "-o", "jsonpath={.metadata.name"}, 1, "", "error: error parsing jsonpath {.metadata.name, unclosed action\n"},
		{"jsonpath without template", []string{"get", "pods", "-o", "jsonpath"}, 1, "", "error: template format specified but no template given\n"},
		// As kubectl: one file is printed whole or not at all, even of
		// several documents; several names print what was found, an
		// empty List if nothing was, then the errors.
		{"one file, one object missing", []string{"get", "-f", thereAndMissing, "-o", "name"}, 1, "", `Error from server (NotFound): configmaps "missing" not found` + "\n"},
		{"several names, one found", []string{"get", "configmap", "there", "missing", "-o", "name"}, 1, "configmap/there\n", `Error from server (NotFound): configmaps "missing" not found` + "\n"},
		{"several names, none found", []string{"get", "configmaps", "gone1", "gone2", "-o", "yaml"}, 1,
			"apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
			`Error from server (NotFound): configmaps "gone1" not found` + "\n" + `Error from server (NotFound): configmaps "gone2" not found` + "\n"},
		{"unknown type among others -o yaml", []string{"get", "widgets,configmaps", "-o", "yaml"}, 1, "", `error: the server doesn't have a resource type "widgets"` + "\n"},
		// A table's errors are listed without "error: ", even one.
		{"bad file, table", []string{"get", "-f", badYAML}, 1, "", "error parsing " + badYAML + ": error converting YAML to JSON: yaml: line 3: did not find expected ',' or '}'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectl(t, append(tt.args, "-n", ns)...)
			if r.code != tt.code || r.out != tt.wantOut || r.err != tt.wantErr {
				t.Fatalf("got %s\nwant exit %d stdout %q stderr %q", r, tt.code, tt.wantOut, tt.wantErr)
			}
		})
	}
}

// startLines runs kubectl-lite and yields its stdout line by line.
func startLines(t *testing.T, args ...string) (<-chan string, func()) {
	t.Helper()
	// The deadline turns a missing line into a failure rather than a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd, stdout := start(ctx, t, args...)
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	return ch, func() {
		cancel()
		_ = cmd.Wait()
	}
}

// awaitLine returns the first line containing all of want; it fails the
// test if the command ends first (the overall test timeout bounds it).
func awaitLine(t *testing.T, ch <-chan string, want ...string) string {
	t.Helper()
	var seen []string
	for l := range ch {
		seen = append(seen, l)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("output ended without a line containing %q; saw %q", want, seen)
	return ""
}

func TestGetWatchPrintsChanges(t *testing.T) {
	ns := namespace(t)
	createPod(t, ns, "watched", nil)
	tests := []struct {
		name string
		args []string
	}{
		{"collection", []string{"get", "pods", "-w", "-n", ns}},
		{"one pod", []string{"get", "pod", "watched", "-w", "-n", ns}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, stop := startLines(t, tt.args...)
			defer stop()
			header := awaitLine(t, ch, "NAME")
			if !strings.Contains(header, "STATUS") {
				t.Fatalf("first line %q is not the header", header)
			}
			awaitLine(t, ch, "watched", []string{"Pending", "Running"}[i])
			// A change made after the listing shows up as a new row.
			label := map[string]string{"step": string(rune('a' + i))}
			p, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), "watched", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Labels = label
			if _, err := env.cs.CoreV1().Pods(ns).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				runPod(t, ns, "watched", "", "10.244.0.9")
				// The event's row lines up under the header (READY is wider than 1/1).
				row := awaitLine(t, ch, "watched", "1/1", "Running")
				if strings.Index(row, "Running") != strings.Index(header, "STATUS") {
					t.Fatalf("event row not aligned with the header:\n%s\n%s", header, row)
				}
			} else {
				awaitLine(t, ch, "watched")
			}
		})
	}
	t.Run("watch-only with -o name", func(t *testing.T) {
		ch, stop := startLines(t, "get", "configmaps", "--watch-only", "-o", "name", "-n", ns)
		defer stop()
		// The watch is open once the server has answered; creating until a
		// line appears keeps the test free of sleeps.
		deadline := time.Now().Add(time.Minute)
		for n := 0; time.Now().Before(deadline); n++ {
			name := "late-" + string(rune('a'+n%26)) + strings.Repeat("x", n/26)
			if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case l := <-ch:
				if !strings.HasPrefix(l, "configmap/late-") {
					t.Fatalf("line %q", l)
				}
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
		t.Fatal("no watch event printed")
	})
}

// TestGetWatchEventsAndSeveralNames: --output-watch-events prints each
// change's event type (existing objects as ADDED), several names of one
// type share one table, and watching several names prints them and fails.
func TestGetWatchEventsAndSeveralNames(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "one", nil)
	createConfigMap(t, ns, "two", nil)

	ch, stop := startLines(t, "get", "configmaps", "one", "-w", "--output-watch-events", "-n", ns)
	defer stop()
	if l := awaitLine(t, ch, "NAME"); !strings.HasPrefix(l, "EVENT ") {
		t.Fatalf("header %q has no EVENT column", l)
	}
	if l := awaitLine(t, ch, "one"); !strings.HasPrefix(l, "ADDED ") {
		t.Fatalf("first row %q is not ADDED", l)
	}
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Update(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Labels: map[string]string{"changed": "yes"}}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l := awaitLine(t, ch, "one"); !strings.HasPrefix(l, "MODIFIED ") {
		t.Fatalf("row after the change %q is not MODIFIED", l)
	}

	r := mustSucceed(t, "get", "configmaps", "one", "two", "-n", ns)
	if rows := table(r.out); len(rows) != 3 || rows[0][0] != "NAME" || rows[1][0] != "one" || rows[2][0] != "two" {
		t.Fatalf("several names are not one table: %s", r)
	}
	r = kubectl(t, "get", "configmaps", "one", "two", "-w", "-n", ns)
	if rows := table(r.out); r.code != 1 || len(rows) != 3 || r.err != "error: you may only watch a single resource or type of resource at a time\n" {
		t.Fatalf("watching several names: %s", r)
	}
	for args, want := range map[string]string{
		"configmaps,pods -w":               "error: you may only specify a single resource type\n",
		"configmaps --output-watch-events": "error: --output-watch-events option can only be used with --watch or --watch-only\n",
	} {
		r := kubectl(t, append(strings.Fields("get "+args), "-n", ns)...)
		if r.code != 1 || r.out != "" || r.err != want {
			t.Fatalf("get %s: %s\nwant stderr %q", args, r, want)
		}
	}
}

// TestGetPrintFlags: kubectl's --template, --server-print, --chunk-size
// and --show-labels checks.
func TestGetPrintFlags(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "one", nil)
	for _, tt := range []struct {
		args             []string
		code             int
		wantOut, wantErr string
	}{
		{[]string{"configmaps", "--template={{range .items}}{{.metadata.name}}{{end}}"}, 0, "one", ""},
		{[]string{"configmaps", "-o", "jsonpath", "--template={.items[0].metadata.name}"}, 0, "one", ""},
		{[]string{"configmaps", "--chunk-size=1", "-o", "name"}, 0, "configmap/one\n", ""},
		{[]string{"configmaps", "--show-labels", "-o", "yaml"}, 1, "", "error: --show-labels option cannot be used with yaml printer\n"},
	} {
		r := kubectl(t, append([]string{"get", "-n", ns}, tt.args...)...)
		if r.code != tt.code || r.out != tt.wantOut || r.err != tt.wantErr {
			t.Fatalf("get %v: %s\nwant exit %d, stdout %q, stderr %q", tt.args, r, tt.code, tt.wantOut, tt.wantErr)
		}
	}
	r := mustSucceed(t, "get", "-n", ns, "configmaps", "--server-print=false")
	if rows := table(r.out); len(rows) != 2 || strings.Join(rows[0], " ") != "NAME AGE" || rows[1][0] != "one" {
		t.Fatalf("--server-print=false: %s", r)
	}
}

// Usage errors end with kubectl's pointer to the command's help, and a
// command group run without a subcommand prints its help and fails.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		err  string
	}{
		{[]string{"get", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl-lite get --help' for usage.\n"},
		{[]string{"rollout", "status", "-q"}, "error: unknown shorthand flag: 'q' in -q\nSee 'kubectl-lite rollout status --help' for usage.\n"},
		{[]string{"--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl-lite --help' for usage.\n"},
		{[]string{"rollout", "bogus"}, "error: unknown command \"bogus\"\nSee 'kubectl-lite rollout -h' for help and examples\n"},
		{[]string{"auth", "bogus"}, "error: unknown command \"bogus\"\nSee 'kubectl-lite auth -h' for help and examples\n"},
		{[]string{"apply", "x"}, "error: Unexpected args: [x]\nSee 'kubectl-lite apply -h' for help and examples\n"},
		{[]string{"create", "x"}, "error: Unexpected args: [x]\nSee 'kubectl-lite create -h' for help and examples\n"},
		{[]string{"api-resources", "x"}, "error: unexpected arguments: [x]\nSee 'kubectl-lite api-resources -h' for help and examples\n"},
		{[]string{"version", "x"}, "error: extra arguments: [x]\n"},
		// As kubectl's, which has set too.
		{[]string{"gett"}, "error: unknown command \"gett\" for \"kubectl-lite\"\n\nDid you mean this?\n\tget\n\tset\n"},
	}
	for _, tt := range tests {
		r := kubectl(t, tt.args...)
		if r.code != 1 || r.out != "" || r.err != tt.err {
			t.Errorf("%s: %s\nwant stderr %q", strings.Join(tt.args, " "), r, tt.err)
		}
	}
	for group, stream := range map[string]string{"rollout": "stdout", "auth": "stderr", "config": "stderr"} {
		r := kubectl(t, group)
		help := map[string]string{"stdout": r.out, "stderr": r.err}[stream]
		if r.code != 1 || !strings.Contains(help, "Available Commands:") {
			t.Errorf("%s alone should print its help on %s and exit 1: %s", group, stream, r)
		}
	}
}

// TestGetSubresourceAndColumnsFile: --subresource prints the named object's
// status or scale, and -o custom-columns-file reads its columns from a file,
// both as kubectl does; so do --show-kind and --allow-missing-template-keys.
func TestGetSubresourceAndColumnsFile(t *testing.T) {
	ns := namespace(t)
	createDeployment(t, ns, "web", "busybox")
	createPod(t, ns, "alpha", map[string]string{"app": "web"})

	r := mustSucceed(t, "get", "deployment", "web", "-n", ns, "--subresource=scale", "-o", "yaml")
	var scale map[string]interface{}
	if err := yaml.Unmarshal([]byte(r.out), &scale); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, r.out)
	}
	if scale["kind"] != "Scale" || scale["apiVersion"] != "autoscaling/v1" || !strings.Contains(r.out, "replicas: 1") {
		t.Fatalf("--subresource=scale -o yaml printed\n%s", r.out)
	}
	r = mustSucceed(t, "get", "pod", "alpha", "-n", ns, "--show-kind")
	if got := table(r.out); len(got) != 2 || got[1][0] != "pod/alpha" {
		t.Fatalf("--show-kind:\n%s", r.out)
	}
	if r := kubectl(t, "get", "pod", "alpha", "-n", ns, "-o", "jsonpath={.nope}", "--allow-missing-template-keys=false"); r.code != 1 || !strings.HasPrefix(r.err, `error: error executing jsonpath "{.nope}": Error executing template: nope is not found.`) {
		t.Fatalf("--allow-missing-template-keys=false: %s", r)
	}
	r = mustSucceed(t, "get", "pod", "alpha", "-n", ns, "--subresource=status")
	if got := table(r.out); len(got) != 2 || got[0][1] != "READY" || got[1][0] != "alpha" {
		t.Fatalf("--subresource=status table:\n%s", r.out)
	}
	if r := kubectl(t, "get", "pods", "-n", ns, "--subresource=status"); r.code != 1 || r.err != "error: subresource cannot be used when bulk resources are specified\n" {
		t.Fatalf("a list with --subresource: %s", r)
	}

	dir := t.TempDir()
	cols := writeFile(t, dir, "cols.txt", "NAME      APP\n.metadata.name   {.metadata.labels.app}\n")
	r = mustSucceed(t, "get", "pods", "-n", ns, "-o", "custom-columns-file="+cols)
	if r.out != "NAME    APP\nalpha   web\n" {
		t.Fatalf("custom-columns-file: %q", r.out)
	}
	bad := writeFile(t, dir, "bad.txt", "NAME APP\n.metadata.name\n")
	for _, tt := range []struct{ output, wantErr string }{
		{"custom-columns-file=" + bad, "error: number of headers (2) and field specifications (1) don't match\n"},
		{"custom-columns-file", "error: custom-columns format specified but no custom columns given\n"},
		{"custom-columns-file=" + filepath.Join(dir, "none"), "error: error reading template " + filepath.Join(dir, "none") + ", open " + filepath.Join(dir, "none") + ": no such file or directory\n"},
	} {
		if r := kubectl(t, "get", "pods", "-n", ns, "-o", tt.output); r.code != 1 || r.out != "" || r.err != tt.wantErr {
			t.Errorf("-o %s: %s", tt.output, r)
		}
	}
}
