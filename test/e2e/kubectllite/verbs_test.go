//go:build e2e

package kubectllite

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createService creates a ClusterIP Service selecting app=<selects>.
func createService(t *testing.T, ns, name, selects string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": selects},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
	if _, err := env.cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service %s: %v", name, err)
	}
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func getConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// sameTemplates fails unless the deployment name has the same pod template
// (and replicas) in both namespaces.
func sameTemplates(t *testing.T, tw twins, name string) *appsv1.Deployment {
	t.Helper()
	lite, up := getDeployment(t, tw.lite, name), getDeployment(t, tw.up, name)
	if !reflect.DeepEqual(lite.Spec.Template, up.Spec.Template) || *lite.Spec.Replicas != *up.Spec.Replicas {
		t.Errorf("deployment %s differs:\nkubectl-lite: %d %+v\nkubectl: %d %+v", name, *lite.Spec.Replicas, lite.Spec.Template, *up.Spec.Replicas, up.Spec.Template)
	}
	return lite
}

// TestExposeLikeKubectl: expose makes the same Service as kubectl from a
// deployment's and a pod's selector, and fails the same way.
func TestExposeLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	tw.each(func(ns string) {
		createDeployment(t, ns, "web", "busybox")
		createPod(t, ns, "p", map[string]string{"app": "p", "tier": "back"})
		createPod(t, ns, "bare", nil)
	})
	if r := tw.same(t, "expose", "deployment", "web", "--port=80", "--target-port=8080", "--name=web-svc"); r.out != "service/web-svc exposed\n" {
		t.Errorf("expose deployment: %s", r)
	}
	tw.same(t, "expose", "pod/p", "--port=90", "--protocol=UDP", "--type=NodePort", "--dry-run=server", "-o", "jsonpath={.spec.type} {.spec.selector} {.spec.ports[0].protocol}")
	tw.same(t, "expose", "pod", "p", "--port=90", "--dry-run=client", "-o", "yaml")
	tw.same(t, "expose", "pod", "p", "--port=90")
	for _, name := range []string{"web-svc", "p"} {
		lite, err1 := env.cs.CoreV1().Services(tw.lite).Get(context.Background(), name, metav1.GetOptions{})
		up, err2 := env.cs.CoreV1().Services(tw.up).Get(context.Background(), name, metav1.GetOptions{})
		if err1 != nil || err2 != nil {
			t.Fatalf("service %s: %v, %v", name, err1, err2)
		}
		if !reflect.DeepEqual(lite.Spec.Selector, up.Spec.Selector) || !reflect.DeepEqual(lite.Spec.Ports, up.Spec.Ports) || lite.Spec.Type != up.Spec.Type {
			t.Errorf("service %s differs:\nkubectl-lite: %+v\nkubectl: %+v", name, lite.Spec, up.Spec)
		}
	}
	if r := tw.same(t, "expose", "deployment", "nope", "--port=80"); r.code != 1 {
		t.Errorf("expose of a missing deployment: %s", r)
	}
	tw.same(t, "expose", "pod", "bare", "--port=80")
	tw.same(t, "expose", "deployment", "web")
}

// TestPatchLikeKubectl: the three patch types, --subresource, a server dry
// run and the errors, as kubectl.
func TestPatchLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	tw.each(func(ns string) {
		createDeployment(t, ns, "web", "busybox")
		createConfigMap(t, ns, "c", nil)
	})
	for _, step := range []struct {
		args []string
		out  string
	}{
		{[]string{"patch", "deployment", "web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"busybox:2"}]}}}}`}, "deployment.apps/web patched\n"},
		{[]string{"patch", "configmap", "c", "--type=merge", "-p", `{"data":{"k":"v"}}`}, "configmap/c patched\n"},
		{[]string{"patch", "configmap", "c", "--type=merge", "-p", `{"data":{"k":"v"}}`}, "configmap/c patched (no change)\n"},
		{[]string{"patch", "configmap/c", "--type=json", "-p", `[{"op":"replace","path":"/data/k","value":"w"}]`, "-o", "jsonpath={.data.k}"}, "w"},
		{[]string{"patch", "configmap", "c", "--type=merge", "-p", `{"data":{"k":"dry"}}`, "--dry-run=server"}, "configmap/c patched\n"},
		{[]string{"patch", "deployment", "web", "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":3}}`}, "scale.autoscaling/web patched\n"},
		{[]string{"patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":3}}`, "-o", "jsonpath={.status.replicas}"}, "3"},
	} {
		if r := tw.same(t, step.args...); r.code != 0 || r.out != step.out {
			t.Errorf("%v: %s\nwant stdout %q", step.args, r, step.out)
		}
	}
	d := sameTemplates(t, tw, "web")
	if d.Spec.Template.Spec.Containers[0].Image != "busybox:2" || *d.Spec.Replicas != 3 {
		t.Errorf("after the patches: image %s, replicas %d", d.Spec.Template.Spec.Containers[0].Image, *d.Spec.Replicas)
	}
	if lite, up := getConfigMap(t, tw.lite, "c"), getConfigMap(t, tw.up, "c"); lite.Data["k"] != "w" || !reflect.DeepEqual(lite.Data, up.Data) {
		t.Errorf("configmap data: kubectl-lite %v, kubectl %v; want k=w", lite.Data, up.Data)
	}
	for _, bad := range [][]string{
		{"patch", "configmap", "nope", "-p", `{"data":{"k":"v"}}`},
		{"patch", "configmap", "c", "-p", `{"data":`},
		{"patch", "configmap", "c", "--type=json", "-p", `[{"op":"test","path":"/data/k","value":"x"}]`},
		{"patch", "configmap", "c", "--type=sideways", "-p", `{}`},
		{"patch", "deployment", "web", "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":-1}}`},
		{"patch", "configmap", "c", "--subresource=status", "-p", `{}`},
	} {
		if r := tw.same(t, bad...); r.code == 0 {
			t.Errorf("%v succeeded: %s", bad, r)
		}
	}
}

// editorScript writes a KUBE_EDITOR that keeps a copy of each file it is
// given (seen-1, seen-2, ... in dir) and applies the sed expression of
// its turn (none when there are fewer expressions than turns).
func editorScript(t *testing.T, dir string, seds ...string) string {
	t.Helper()
	script := "#!/bin/sh\nset -e\nn=$(cat " + dir + "/count 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > " + dir + "/count\ncp \"$1\" " + dir + "/seen-$n\ncase $n in\n"
	for i, s := range seds {
		script += "  " + string(rune('1'+i)) + ") sed -i -e '" + s + "' \"$1\" ;;\n"
	}
	script += "esac\n"
	p := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// editBoth runs edit with each client, each with its own editor script
// named by $KUBE_EDITOR.
func editBoth(t *testing.T, tw twins, seds []string, args ...string) (lite, up result, liteDir, upDir string) {
	t.Helper()
	return editBothWith(t, tw, "KUBE_EDITOR", seds, args...)
}

// editBothWith is editBoth with the editor named by variable (KUBE_EDITOR
// or EDITOR, the other one empty).
func editBothWith(t *testing.T, tw twins, variable string, seds []string, args ...string) (lite, up result, liteDir, upDir string) {
	t.Helper()
	liteDir, upDir = t.TempDir(), t.TempDir()
	editor := func(dir string) invocation {
		return invocation{env: []string{"KUBE_EDITOR=", "EDITOR=", variable + "=" + editorScript(t, dir, seds...)}}
	}
	lite = runBinary(t, env.kubectl, editor(liteDir), append([]string{"-n", tw.lite}, args...)...)
	up = runBinary(t, upstreamKubectl(t), editor(upDir), append([]string{"-n", tw.up}, args...)...)
	up.out = strings.ReplaceAll(up.out, tw.up, tw.lite)
	up.err = strings.ReplaceAll(up.err, tw.up, tw.lite)
	if withoutTempPaths(lite.out) != withoutTempPaths(up.out) || withoutTempPaths(lite.err) != withoutTempPaths(up.err) || lite.code != up.code {
		t.Errorf("edit %v: kubectl-lite and kubectl differ\nkubectl-lite: %s\nkubectl: %s", seds, lite, up)
	}
	return lite, up, liteDir, upDir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEditLikeKubectl: edit opens $KUBE_EDITOR on the object, saves what
// changed, re-opens the file with the server's refusal at its top when an
// edit is invalid, and gives up with a copy of the changes when the user
// saves the invalid file again, as kubectl does.
func TestEditLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	tw.each(func(ns string) {
		createDeployment(t, ns, "web", "busybox")
		createConfigMap(t, ns, "c", nil)
	})
	if r, _, _, _ := editBoth(t, tw, []string{`s/^metadata:/data: {color: blue}\nmetadata:/`}, "edit", "configmap", "c"); r.code != 0 || r.out != "configmap/c edited\n" {
		t.Errorf("edit: %s", r)
	}
	if cm := getConfigMap(t, tw.lite, "c"); cm.Data["color"] != "blue" {
		t.Errorf("after edit: data %v, want color=blue", cm.Data)
	}
	if r, _, _, _ := editBothWith(t, tw, "EDITOR", []string{`s/color: blue/color: red/`}, "edit", "configmap", "c"); r.code != 0 || r.out != "configmap/c edited\n" {
		t.Errorf("edit with $EDITOR: %s", r)
	}
	if cm := getConfigMap(t, tw.lite, "c"); cm.Data["color"] != "red" {
		t.Errorf("after edit with $EDITOR: data %v, want color=red", cm.Data)
	}
	if r, _, _, _ := editBoth(t, tw, nil, "edit", "configmap", "c"); r.code != 0 || r.err != "Edit cancelled, no changes made.\n" {
		t.Errorf("edit without a change: %s", r)
	}

	// Refused, re-opened, fixed.
	r, _, liteDir, upDir := editBoth(t, tw, []string{`s/replicas: 1/replicas: -1/`, `s/replicas: -1/replicas: 2/`}, "edit", "deployment/web")
	if r.code != 0 || r.out != "deployment.apps/web edited\n" {
		t.Errorf("edit refused then fixed: %s", r)
	}
	second := readFile(t, filepath.Join(liteDir, "seen-2"))
	if !strings.Contains(second, "# deployments.apps \"web\" was not valid:\n") || !strings.Contains(second, "spec.replicas: Invalid value: -1") {
		t.Errorf("the re-opened file does not show the refusal:\n%s", second)
	}
	if up := strings.ReplaceAll(readFile(t, filepath.Join(upDir, "seen-2")), tw.up, tw.lite); !sameIgnoringObjectIdentity(second, up) {
		t.Errorf("the re-opened file differs from kubectl's:\nkubectl-lite:\n%s\nkubectl:\n%s", second, up)
	}
	if d := sameTemplates(t, tw, "web"); *d.Spec.Replicas != 2 {
		t.Errorf("after the fixed edit: %d replicas, want 2", *d.Spec.Replicas)
	}

	// Refused and saved again unchanged: kubectl gives up and keeps a copy.
	r, _, _, _ = editBoth(t, tw, []string{`s/replicas: 2/replicas: -1/`}, "edit", "deployment/web")
	if r.code != 1 || !strings.Contains(r.err, "A copy of your changes has been stored to") || !strings.Contains(r.err, "error: Edit cancelled, no valid changes were saved.") {
		t.Errorf("edit refused twice: %s", r)
	}
	tw.sameWith(t, invocation{env: []string{"KUBE_EDITOR=true"}}, nil, "edit", "configmap", "nope")
}

// sameIgnoringObjectIdentity compares two edit files but for the lines
// that differ between any two objects (uid, resourceVersion, times).
func sameIgnoringObjectIdentity(a, b string) bool {
	keep := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			f := strings.TrimSpace(l)
			if strings.HasPrefix(f, "uid:") || strings.HasPrefix(f, "resourceVersion:") || strings.HasPrefix(f, "creationTimestamp:") ||
				strings.HasPrefix(f, "lastTransitionTime:") || strings.HasPrefix(f, "lastUpdateTime:") {
				continue
			}
			out = append(out, l)
		}
		return out
	}
	return reflect.DeepEqual(keep(a), keep(b))
}

// TestSetLikeKubectl: set image, env, resources, selector, serviceaccount
// and subject change the same fields as kubectl's and print the same.
func TestSetLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	tw.each(func(ns string) {
		createDeployment(t, ns, "web", "busybox")
		createService(t, ns, "web", "web")
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "rb"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		}
		if _, err := env.cs.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	for _, step := range []struct {
		args []string
		out  string
	}{
		{[]string{"set", "image", "deployment/web", "app=busybox:2"}, "deployment.apps/web image updated\n"},
		{[]string{"set", "env", "deployment/web", "GREETING=hi", "COLOR=blue"}, "deployment.apps/web env updated\n"},
		{[]string{"set", "env", "deployment/web", "COLOR-"}, "deployment.apps/web env updated\n"},
		{[]string{"set", "env", "deployment/web", "--list"}, "# Deployment web, container app\nGREETING=hi\n"},
		{[]string{"set", "resources", "deployment", "web", "--limits=cpu=200m,memory=64Mi", "--requests=cpu=100m"}, "deployment.apps/web resource requirements updated\n"},
		{[]string{"set", "serviceaccount", "deployment", "web", "robot"}, "deployment.apps/web serviceaccount updated\n"},
		{[]string{"set", "selector", "service", "web", "app=other"}, "service/web selector updated\n"},
		{[]string{"set", "subject", "rolebinding", "rb", "--user=alice", "--serviceaccount=default:robot"}, "rolebinding.rbac.authorization.k8s.io/rb subjects updated\n"},
		{[]string{"set", "image", "deployment/web", "app=busybox:3", "--dry-run=server"}, "deployment.apps/web image updated (server dry run)\n"},
	} {
		if r := tw.same(t, step.args...); r.code != 0 || r.out != step.out {
			t.Errorf("%v: %s\nwant stdout %q", step.args, r, step.out)
		}
	}
	d := sameTemplates(t, tw, "web")
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "busybox:2" || len(c.Env) != 1 || c.Env[0].Name != "GREETING" || c.Resources.Limits.Cpu().String() != "200m" ||
		c.Resources.Requests.Cpu().String() != "100m" || d.Spec.Template.Spec.ServiceAccountName != "robot" {
		t.Errorf("after set: %+v, service account %q", c, d.Spec.Template.Spec.ServiceAccountName)
	}
	for _, ns := range []string{tw.lite, tw.up} {
		svc, err := env.cs.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(svc.Spec.Selector, map[string]string{"app": "other"}) {
			t.Errorf("service web in %s after set selector: %v, %v", ns, svc.Spec.Selector, err)
		}
	}
	for _, ns := range []string{tw.lite, tw.up} {
		rb, err := env.cs.RbacV1().RoleBindings(ns).Get(context.Background(), "rb", metav1.GetOptions{})
		if err != nil || len(rb.Subjects) != 2 || rb.Subjects[0].Name != "alice" || rb.Subjects[1].Name != "robot" {
			t.Errorf("rolebinding rb in %s after set subject: %+v, %v", ns, rb.Subjects, err)
		}
	}
	for _, bad := range [][]string{
		{"set", "image", "deployment/web", "nosuch=busybox"},
		{"set", "image", "deployment/nope", "app=busybox"},
		{"set", "env", "deployment/web", "1BAD=x"},
		{"set", "resources", "deployment/web", "--limits=cpu=lots"},
		{"set", "selector", "service", "web", "a b"},
	} {
		if r := tw.same(t, bad...); r.code == 0 {
			t.Errorf("%v succeeded: %s", bad, r)
		}
	}
}

// diffBody is a diff without its header lines, which name temporary
// files and times.
func diffBody(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "diff -u -N ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") ||
			strings.Contains(l, "uid: ") || strings.Contains(l, "creationTimestamp: ") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestDiffLikeKubectl: diff shows what the server's dry run of the file
// would change, exits 1 when something would and 0 when nothing would.
func TestDiffLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	tw.each(func(ns string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"color": "blue"}}
		if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	dir := t.TempDir()
	changed := writeFile(t, dir, "changed.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {color: green}\n")
	r := tw.sameWith(t, invocation{}, diffBody, "diff", "-f", changed)
	if r.code != 1 || !strings.Contains(r.out, "\n-  color: blue\n+  color: green\n") {
		t.Errorf("diff of a change: %s", r)
	}
	if cm := getConfigMap(t, tw.lite, "c"); cm.Data["color"] != "blue" {
		t.Errorf("diff changed the object: %v", cm.Data)
	}
	unchanged := writeFile(t, dir, "unchanged.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {color: blue}\n")
	if r := tw.same(t, "diff", "-f", unchanged); r.code != 0 || r.out != "" {
		t.Errorf("diff of no change: %s", r)
	}
	added := writeFile(t, dir, "added.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\ndata: {size: large}\n")
	if r := tw.sameWith(t, invocation{}, diffBody, "diff", "-f", added); r.code != 1 || !strings.Contains(r.out, "+  size: large\n") {
		t.Errorf("diff of a new object: %s", r)
	}
	invalid := writeFile(t, dir, "invalid.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n")
	tw.same(t, "diff", "-f", invalid)
	tw.same(t, "diff", "-f", filepath.Join(dir, "missing.yaml"))
}

// createEvent records an event about kind/name seen last at the given time.
func createEvent(t *testing.T, ns, name, kind, object, reason, typ, message string, last time.Time) {
	t.Helper()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: object, Namespace: ns, APIVersion: "v1"},
		Reason:         reason, Type: typ, Message: message, Count: 1,
		FirstTimestamp: metav1.NewTime(last), LastTimestamp: metav1.NewTime(last),
		Source: corev1.EventSource{Component: "e2e"},
	}
	if _, err := env.cs.CoreV1().Events(ns).Create(context.Background(), e, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating event %s: %v", name, err)
	}
}

// TestEventsLikeKubectl: events lists a namespace's events oldest first,
// filters them by object and type, and with --watch prints new ones as
// they come.
func TestEventsLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	now := time.Now()
	tw.each(func(ns string) {
		// Created out of order: the listing sorts them by time.
		createEvent(t, ns, "e2", "Pod", "web", "Pulled", "Normal", "Pulled the image", now.Add(-2*time.Hour))
		createEvent(t, ns, "e1", "Pod", "web", "Scheduled", "Normal", "Assigned to node-1", now.Add(-3*time.Hour))
		createEvent(t, ns, "e3", "ConfigMap", "c", "Odd", "Warning", "Something odd", now.Add(-90*time.Minute))
	})
	r := tw.same(t, "events")
	want := [][]string{
		{"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
		{"3h", "Normal", "Scheduled", "Pod/web", "Assigned", "to", "node-1"},
		{"120m", "Normal", "Pulled", "Pod/web", "Pulled", "the", "image"},
		{"90m", "Warning", "Odd", "ConfigMap/c", "Something", "odd"},
	}
	if got := table(r.out); !reflect.DeepEqual(got, want) {
		t.Errorf("events: %v\nwant %v\n%s", got, want, r)
	}
	if r := tw.same(t, "events", "--for", "pod/web"); len(lines(r.out)) != 3 {
		t.Errorf("events --for pod/web: %s", r)
	}
	if r := tw.same(t, "events", "--types=Warning", "--no-headers"); len(lines(r.out)) != 1 || !strings.Contains(r.out, "ConfigMap/c") {
		t.Errorf("events --types=Warning: %s", r)
	}
	tw.same(t, "events", "-o", "jsonpath={.items[*].reason}")
	tw.same(t, "events", "--for", "pod/nope")
	tw.same(t, "events", "--types=Odd")
	tw.same(t, "events", "--for", "nokind/x")

	ch, stop := startLines(t, "-n", tw.lite, "events", "--watch")
	defer stop()
	awaitLine(t, ch, "Scheduled", "Pod/web")
	createEvent(t, tw.lite, "e4", "Pod", "web", "Started", "Normal", "Started container app", time.Now())
	awaitLine(t, ch, "Normal", "Started", "Pod/web", "Started container app")
}

// TestAutoscale: kube-lite does not serve horizontalpodautoscalers
// (neither autoscaling/v2 nor v1), so autoscale fails with the server's
// answer to its discovery request, where kubectl's says only that the
// settings do not fit autoscaling/v1; a client dry run prints the
// autoscaling/v2 object kubectl's does.
func TestAutoscale(t *testing.T) {
	tw := newTwins(t)
	tw.each(func(ns string) { createDeployment(t, ns, "web", "busybox") })
	lite, up := tw.run(t, invocation{}, "autoscale", "deployment", "web", "--min=1", "--max=3")
	if want := "error: autoscale creates autoscaling/v2 horizontalpodautoscalers, which the server does not serve: GET /apis/autoscaling/v2: not found\n"; lite.code != 1 || lite.out != "" || lite.err != want {
		t.Errorf("autoscale: %s\nwant stderr %q", lite, want)
	}
	if up.code != 1 {
		t.Errorf("kubectl autoscale succeeded: %s", up)
	}
	// Flags are checked before the server is asked.
	tw.same(t, "autoscale", "deployment", "web", "--min=3", "--max=1")
	if r := tw.same(t, "autoscale", "deployment/web", "--max=3", "--cpu-percent=50", "--dry-run=client", "-o", "yaml"); r.code != 0 ||
		!strings.Contains(r.out, "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n") || !strings.HasPrefix(r.err, "Flag --cpu-percent has been deprecated") {
		t.Errorf("autoscale --dry-run=client: %s", r)
	}
}
