//go:build e2e

package kubectllite

import (
	"bufio"
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func createConfigMap(t *testing.T, ns, name string, labels map[string]string, finalizers ...string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Finalizers: finalizers}}
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating configmap %s: %v", name, err)
	}
}

func configMapNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := env.cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	sort.Strings(names)
	return names
}

func TestDeleteSelections(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	f := writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-file}\n")
	for _, n := range []string{"one", "two", "from-file"} {
		createConfigMap(t, ns, n, nil)
	}
	createConfigMap(t, ns, "web-a", map[string]string{"app": "web"})
	createConfigMap(t, ns, "web-b", map[string]string{"app": "web"})

	tests := []struct {
		name    string
		args    []string
		wantOut string
		left    []string
	}{
		{"client dry run", []string{"configmap", "one", "--dry-run=client"},
			`configmap "one" deleted from ` + ns + " namespace (dry run)\n", []string{"from-file", "one", "two", "web-a", "web-b"}},
		{"server dry run", []string{"configmap", "one", "--dry-run=server", "-o", "name"},
			"configmap/one\n", []string{"from-file", "one", "two", "web-a", "web-b"}},
		{"type and name", []string{"configmap", "one", "--now"},
			`configmap "one" deleted from ` + ns + " namespace\n", []string{"from-file", "two", "web-a", "web-b"}},
		{"file", []string{"-f", f},
			`configmap "from-file" deleted from ` + ns + " namespace\n", []string{"two", "web-a", "web-b"}},
		{"label selector", []string{"configmaps", "-l", "app=web"},
			`configmap "web-a" deleted from ` + ns + " namespace\n" + `configmap "web-b" deleted from ` + ns + " namespace\n", []string{"two"}},
		{"all, as names", []string{"configmaps", "--all", "-o", "name"}, "configmap/two\n", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"delete", "-n", ns}, tt.args...)...)
			if r.out != tt.wantOut {
				t.Fatalf("stdout %q, want %q", r.out, tt.wantOut)
			}
			if got := configMapNames(t, ns); !reflect.DeepEqual(got, tt.left) {
				t.Fatalf("left %v, want %v", got, tt.left)
			}
		})
	}
	t.Run("nothing selected", func(t *testing.T) {
		// kubectl says so on stdout.
		r := mustSucceed(t, "delete", "-n", ns, "configmaps", "-l", "app=nobody")
		if r.out != "No resources found\n" || r.err != "" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("cluster-scoped with -n", func(t *testing.T) {
		r := mustSucceed(t, "delete", "-n", ns, "clusterrole", "ghost", "--ignore-not-found")
		if r.err != "Warning: deleting cluster-scoped resources, not scoped to the provided namespace\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("not found", func(t *testing.T) {
		r := kubectl(t, "delete", "-n", ns, "configmap", "ghost")
		if r.code != 1 || r.err != `Error from server (NotFound): configmaps "ghost" not found`+"\n" {
			t.Fatalf("%s", r)
		}
		if r := mustSucceed(t, "delete", "-n", ns, "configmap", "ghost", "--ignore-not-found"); r.out != "" {
			t.Fatalf("--ignore-not-found printed %q", r.out)
		}
	})
	t.Run("--ignore-not-found keeps the file's other errors as kubectl prints them", func(t *testing.T) {
		// The errors left once NotFound is dropped are a list, listed
		// without "error: ", even when there is only one.
		g := writeFile(t, dir, "mixed.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ghost}\n---\n"+
			"apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n")
		r := kubectl(t, "delete", "-n", ns, "-f", g, "--ignore-not-found")
		want := `resource mapping not found for name: "w" namespace: "" from "` + g + `": no matches for kind "Widget" in version "v1"` +
			"\nensure CRDs are installed first\n"
		if r.code != 1 || r.out != "" || r.err != want {
			t.Fatalf("%s\nwant stderr %q", r, want)
		}
	})
}

func TestDeleteGracePeriodAndForce(t *testing.T) {
	ns := namespace(t)
	node := createNode(t, "node-"+ns, 0)
	for _, n := range []string{"default-grace", "short-grace", "forced"} {
		createPod(t, ns, n, nil)
		runPod(t, ns, n, node, "10.244.1.1")
	}
	tests := []struct {
		name      string
		args      []string
		wantOut   string
		wantErr   string
		wantGrace int64 // -1: the pod is gone
	}{
		{"default grace period", []string{"pod", "default-grace", "--wait=false"}, `pod "default-grace" deleted from ` + ns + " namespace\n", "", 30},
		{"--grace-period", []string{"pod", "short-grace", "--grace-period=5", "--wait=false"}, `pod "short-grace" deleted from ` + ns + " namespace\n", "", 5},
		{"--force --grace-period=0", []string{"pod", "forced", "--force", "--grace-period=0"}, `pod "forced" force deleted from ` + ns + " namespace\n",
			"Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated.", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"delete", "-n", ns}, tt.args...)...)
			if r.out != tt.wantOut || !strings.Contains(r.err, tt.wantErr) {
				t.Fatalf("%s\nwant stdout %q, stderr containing %q", r, tt.wantOut, tt.wantErr)
			}
			p, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), tt.args[1], metav1.GetOptions{})
			if tt.wantGrace < 0 {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("pod still there (get error %v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != tt.wantGrace {
				t.Fatalf("deletionTimestamp %v, grace %v; want grace %d", p.DeletionTimestamp, p.DeletionGracePeriodSeconds, tt.wantGrace)
			}
		})
	}
}

func TestDeleteWaitsUntilGone(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "held", nil, "example.com/hold")

	// A finalizer keeps the object: waiting ends only at the timeout.
	r := kubectl(t, "delete", "-n", ns, "configmap", "held", "--timeout=1s")
	if want := "error: timed out waiting for the condition on configmaps/held\n"; r.code != 1 || r.err != want {
		t.Fatalf("%s\nwant stderr %q", r, want)
	}

	cmd, stdout := start(context.Background(), t, "delete", "-n", ns, "configmap", "held")
	// The line is printed once the server accepted the delete; the command
	// must still be waiting then, as the finalizer holds the object.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != `configmap "held" deleted from `+ns+" namespace\n" {
		t.Fatalf("first line %q (%v)", line, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("delete exited with %v once the finalizer was removed", err)
	}
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete returned while the object exists (get error %v)", err)
	}
}

func TestDeleteCascade(t *testing.T) {
	ns := namespace(t)
	tests := []struct {
		cascade       string
		wantFinalizer string // "" means the object is gone
	}{
		{"orphan", metav1.FinalizerOrphanDependents},
		{"foreground", metav1.FinalizerDeleteDependents},
		{"background", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cascade, func(t *testing.T) {
			name := "d-" + tt.cascade
			createDeployment(t, ns, name, "busybox:1")
			mustSucceed(t, "delete", "-n", ns, "deployment", name, "--cascade="+tt.cascade, "--wait=false")
			d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
			if tt.wantFinalizer == "" {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("background delete left the deployment (get error %v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.DeletionTimestamp == nil || !reflect.DeepEqual(d.Finalizers, []string{tt.wantFinalizer}) {
				t.Fatalf("finalizers %v deletionTimestamp %v, want [%s] (the garbage collector's cue)", d.Finalizers, d.DeletionTimestamp, tt.wantFinalizer)
			}
		})
	}
	t.Run("bad value", func(t *testing.T) {
		r := kubectl(t, "delete", "-n", ns, "deployment", "x", "--cascade=sideways")
		if r.code != 1 || !strings.Contains(r.err, `invalid cascade value (sideways)`) {
			t.Fatalf("%s", r)
		}
	})
}

// createDeployment creates a one-replica deployment selecting app=<name>.
func createDeployment(t *testing.T, ns, name, image string) *appsv1.Deployment {
	t.Helper()
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
	d, err := env.cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating deployment %s: %v", name, err)
	}
	return d
}

// createNode registers a Ready node at 127.0.0.1 whose kubelet listens on
// port (0: none).
func createNode(t *testing.T, name string, port int32) string {
	t.Helper()
	ctx := context.Background()
	n, err := env.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := env.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating node status: %v", err)
	}
	return name
}
