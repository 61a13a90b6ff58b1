//go:build e2e

package upstreamkubectl

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: kube-lite.local/busybox:1.35
        command: ["sleep", "3600"]
`

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: busy
  labels:
    app: busy
spec:
  containers:
  - name: main
    image: kube-lite.local/busybox:1.35
    command: ["sleep", "3600"]
`

const configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
  size: large
`

// header returns the column names of kubectl's table output.
func header(out string) []string {
	line, _, _ := strings.Cut(out, "\n")
	return strings.Fields(line)
}

// row returns the fields of the table row whose first column is name.
func row(out, name string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}

func TestApplyGetDescribe(t *testing.T) {
	writeManifest(t, "deployment.yaml", deploymentYAML)
	writeManifest(t, "pod.yaml", podYAML)
	writeManifest(t, "configmap.yaml", configMapYAML)

	out := mustKubectl(t, "apply", "-f", cluster.work)
	for _, want := range []string{"deployment.apps/web created", "pod/busy created", "configmap/settings created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}

	t.Run("get tables", func(t *testing.T) {
		cases := []struct {
			args    []string
			columns []string
			name    string
			cells   []string // leading cells after the name
		}{
			{[]string{"get", "pods"}, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, "busy", []string{"0/1", "Pending", "0"}},
			{[]string{"get", "deployments"}, []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}, "web", []string{"0/2", "0", "0"}},
			{[]string{"get", "configmaps"}, []string{"NAME", "DATA", "AGE"}, "settings", []string{"2"}},
			{[]string{"get", "po", "busy", "-o", "wide"}, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"}, "busy", []string{"0/1", "Pending", "0"}},
		}
		for _, tc := range cases {
			out := mustKubectl(t, tc.args...)
			if got := header(out); !slices.Equal(got, tc.columns) {
				t.Errorf("kubectl %s: columns %v, want %v\n%s", strings.Join(tc.args, " "), got, tc.columns, out)
			}
			r := row(out, tc.name)
			if len(r) < 1+len(tc.cells) || !slices.Equal(r[1:1+len(tc.cells)], tc.cells) {
				t.Errorf("kubectl %s: row %v, want %s %v ...\n%s", strings.Join(tc.args, " "), r, tc.name, tc.cells, out)
			}
		}
	})

	t.Run("get -o yaml parses back", func(t *testing.T) {
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(mustKubectl(t, "get", "pod", "busy", "-o", "yaml")), &pod); err != nil {
			t.Fatalf("parse pod yaml: %v", err)
		}
		if pod.Name != "busy" || pod.Namespace != "default" || pod.UID == "" || pod.ResourceVersion == "" || pod.CreationTimestamp.IsZero() {
			t.Errorf("metadata = %+v, want name, namespace, uid, resourceVersion, creationTimestamp", pod.ObjectMeta)
		}
		if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("defaults: restartPolicy=%q imagePullPolicy=%q, want Always and IfNotPresent", pod.Spec.RestartPolicy, pod.Spec.Containers[0].ImagePullPolicy)
		}
		if pod.Annotations[corev1.LastAppliedConfigAnnotation] == "" {
			t.Error("no last-applied-configuration annotation after kubectl apply")
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(mustKubectl(t, "get", "deploy", "web", "-o", "yaml")), &d); err != nil {
			t.Fatalf("parse deployment yaml: %v", err)
		}
		if d.Generation != 1 || *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "kube-lite.local/busybox:1.35" {
			t.Errorf("deployment generation=%d replicas=%d, want 1 and 2", d.Generation, *d.Spec.Replicas)
		}
	})

	t.Run("describe", func(t *testing.T) {
		out := mustKubectl(t, "describe", "pod", "busy")
		for _, want := range []string{"Name:", "busy", "Namespace:", "default", "Containers:", "main:", "kube-lite.local/busybox:1.35", "Status:", "Pending"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe pod lacks %q:\n%s", want, out)
			}
		}
		out = mustKubectl(t, "describe", "deployment", "web")
		for _, want := range []string{"Name:", "web", "Replicas:", "2 desired", "Selector:", "app=web"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe deployment lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("apply twice is unchanged, a removed field is removed", func(t *testing.T) {
		p := writeManifest(t, "configmap.yaml", configMapYAML)
		if out := mustKubectl(t, "apply", "-f", p); !strings.Contains(out, "configmap/settings unchanged") {
			t.Errorf("second apply: %q, want configmap/settings unchanged", out)
		}
		writeManifest(t, "configmap.yaml", strings.Replace(configMapYAML, "  size: large\n", "", 1))
		if out := mustKubectl(t, "apply", "-f", p); !strings.Contains(out, "configmap/settings configured") {
			t.Errorf("apply without size: %q, want configmap/settings configured", out)
		}
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(mustKubectl(t, "get", "cm", "settings", "-o", "yaml")), &cm); err != nil {
			t.Fatal(err)
		}
		if _, ok := cm.Data["size"]; ok || cm.Data["color"] != "blue" {
			t.Errorf("data = %v, want only color=blue", cm.Data)
		}
		// The deployment, applied again unchanged, keeps its generation.
		if out := mustKubectl(t, "apply", "-f", writeManifest(t, "deployment.yaml", deploymentYAML)); !strings.Contains(out, "deployment.apps/web unchanged") {
			t.Errorf("deployment re-apply: %q, want unchanged", out)
		}
	})

	t.Run("apply --validate=strict refuses an unknown field", func(t *testing.T) {
		bad := strings.Replace(podYAML, "name: busy", "name: typo", 1)
		bad = strings.Replace(bad, "    command:", "    imagePullPolize: Always\n    command:", 1)
		p := writeManifest(t, "typo.yaml.bad", bad)
		out, errOut, err := kubectl(t, "apply", "--validate=strict", "-f", p)
		if err == nil {
			t.Fatalf("apply of an unknown field succeeded: %s", out)
		}
		if !strings.Contains(errOut, "unknown field") || !strings.Contains(errOut, "imagePullPolize") {
			t.Errorf("error does not name the unknown field:\n%s", errOut)
		}
		if _, _, err := kubectl(t, "get", "pod", "typo"); err == nil {
			t.Error("the refused pod exists")
		}
	})

	t.Run("a JSON patch that fails says which operation", func(t *testing.T) {
		_, errOut, err := kubectl(t, "patch", "deployment", "web", "--type=json", "-p", `[{"op":"test","path":"/spec/replicas","value":99}]`)
		if err == nil {
			t.Fatal("a failing test operation was applied")
		}
		if !strings.Contains(errOut, "The request is invalid") || !strings.Contains(errOut, "/spec/replicas") {
			t.Errorf("kubectl printed %q, want the failing operation's path", errOut)
		}
	})
}

// lineReader delivers a process's output line by line.
func lineReader(r io.Reader) <-chan string {
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// waitLine reads lines until one satisfies ok. The timeout only keeps a
// broken server from hanging the suite; it is not what the test checks.
func waitLine(t *testing.T, lines <-chan string, what string, ok func(string) bool) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	var seen []string
	for {
		select {
		case l, open := <-lines:
			if !open {
				t.Fatalf("output ended before %s; saw %q", what, seen)
			}
			if ok(l) {
				return l
			}
			seen = append(seen, l)
		case <-timeout:
			t.Fatalf("no %s within a minute; saw %q", what, seen)
		}
	}
}

func TestGetWatchPrintsChange(t *testing.T) {
	mustKubectl(t, "create", "configmap", "watched", "--from-literal=a=1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, cluster.kubectl, "--kubeconfig", cluster.kubeconfig, "get", "configmap", "watched", "-w")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := lineReader(stdout)
	waitLine(t, lines, "the initial row", func(l string) bool { return slices.Equal(strings.Fields(l)[:2], []string{"watched", "1"}) })
	mustKubectl(t, "patch", "configmap", "watched", "--type=merge", "-p", `{"data":{"b":"2","c":"3"}}`)
	waitLine(t, lines, "the changed row", func(l string) bool {
		f := strings.Fields(l)
		return len(f) >= 2 && f[0] == "watched" && f[1] == "3"
	})
}

func TestDeleteWaitsForFinalizers(t *testing.T) {
	p := writeManifest(t, "held.yaml.cm", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [kube-lite.io/hold]\n")
	mustKubectl(t, "apply", "-f", p)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	del := exec.CommandContext(ctx, cluster.kubectl, "--kubeconfig", cluster.kubeconfig, "delete", "configmap", "held", "--wait", "--timeout=5m")
	var out strings.Builder
	del.Stdout, del.Stderr = &out, &out
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- del.Wait() }()

	// kubectl cannot report the deletion while the object exists; wait
	// until the server has marked it, then release it.
	for {
		ts, _, err := kubectl(t, "get", "configmap", "held", "-o", "jsonpath={.metadata.deletionTimestamp}")
		if err != nil {
			t.Fatalf("held configmap vanished while its finalizer was set: %v", err)
		}
		if ts != "" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("kubectl delete --wait returned before deletion started: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("kubectl delete --wait returned while the finalizer held the object: %v\n%s", err, out.String())
	default:
	}
	mustKubectl(t, "patch", "configmap", "held", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	if err := <-done; err != nil {
		t.Fatalf("kubectl delete --wait: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `configmap "held" deleted`) {
		t.Errorf("delete output %q, want configmap \"held\" deleted", out.String())
	}
	if _, errOut, err := kubectl(t, "get", "configmap", "held"); err == nil || !strings.Contains(errOut, `Error from server (NotFound): configmaps "held" not found`) {
		t.Errorf("get after delete: err=%v stderr=%q, want NotFound", err, errOut)
	}

	t.Run("delete pod --wait", func(t *testing.T) {
		mustKubectl(t, "run", "short", "--image=kube-lite.local/busybox:1.35", "--restart=Never")
		if out := mustKubectl(t, "delete", "pod", "short", "--wait"); !strings.Contains(out, `pod "short" deleted`) {
			t.Errorf("delete output %q", out)
		}
		if _, _, err := kubectl(t, "get", "pod", "short"); err == nil {
			t.Error("pod still there after delete --wait")
		}
	})
}
