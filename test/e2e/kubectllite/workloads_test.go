//go:build e2e

package kubectllite

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeKubelet serves /containerLogs like a kubelet and records queries.
type fakeKubelet struct {
	mu      sync.Mutex
	queries []url.Values
	srv     *httptest.Server
}

var containerLogs = map[string][]string{
	"app":     {"app line 1", "app line 2", "app line 3"},
	"sidecar": {"sidecar line 1"},
}

func newFakeKubelet(t *testing.T) *fakeKubelet {
	k := &fakeKubelet{}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
		if len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		k.mu.Lock()
		k.queries = append(k.queries, q)
		k.mu.Unlock()
		logs, ok := containerLogs[parts[2]]
		if !ok {
			http.Error(w, "container "+parts[2]+" not found", http.StatusNotFound)
			return
		}
		if q.Get("previous") == "true" {
			if parts[2] == "sidecar" { // never restarted: what a kubelet answers
				http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", parts[2], parts[1]), http.StatusBadRequest)
				return
			}
			logs = []string{"previous instance line"}
		}
		if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n < len(logs) {
			logs = logs[len(logs)-n:]
		}
		for _, l := range logs {
			if q.Get("timestamps") == "true" {
				l = "2026-01-02T03:04:05.000000000Z " + l
			}
			fmt.Fprintln(w, l)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *fakeKubelet) port(t *testing.T) int32 {
	u, err := url.Parse(k.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return int32(p)
}

func (k *fakeKubelet) lastQuery() url.Values {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.queries) == 0 {
		return nil
	}
	return k.queries[len(k.queries)-1]
}

func TestLogs(t *testing.T) {
	ns := namespace(t)
	kubelet := newFakeKubelet(t)
	node := createNode(t, "logs-"+ns, kubelet.port(t))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "talker"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "busybox"}, {Name: "sidecar", Image: "busybox"}}}}
	if _, err := env.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPod(t, ns, "talker", node, "10.244.2.2")

	tests := []struct {
		name      string
		args      []string
		want      string
		wantErr   string
		wantQuery map[string]string
	}{
		{"-c", []string{"talker", "-c", "app"}, "app line 1\napp line 2\napp line 3\n", "", map[string]string{"tailLines": "", "follow": ""}},
		{"default container", []string{"talker"}, "app line 1\napp line 2\napp line 3\n", `Defaulted container "app" out of: app, sidecar`, nil},
		{"inline container and TYPE/NAME", []string{"pod/talker", "sidecar"}, "sidecar line 1\n", "", nil},
		{"--tail", []string{"talker", "-c", "app", "--tail=2"}, "app line 2\napp line 3\n", "", map[string]string{"tailLines": "2"}},
		{"--timestamps", []string{"talker", "-c", "sidecar", "--timestamps"}, "2026-01-02T03:04:05.000000000Z sidecar line 1\n", "", map[string]string{"timestamps": "true"}},
		{"--previous", []string{"talker", "-c", "app", "--previous"}, "previous instance line\n", "", map[string]string{"previous": "true"}},
		{"-f", []string{"talker", "-c", "app", "-f"}, "app line 1\napp line 2\napp line 3\n", "", map[string]string{"follow": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"logs", "-n", ns}, tt.args...)...)
			if r.out != tt.want || !strings.Contains(r.err, tt.wantErr) {
				t.Fatalf("%s\nwant stdout %q and stderr containing %q", r, tt.want, tt.wantErr)
			}
			q := kubelet.lastQuery()
			for k, v := range tt.wantQuery {
				if q.Get(k) != v {
					t.Errorf("the kubelet got %s=%q, want %q (query %v)", k, q.Get(k), v, q)
				}
			}
		})
	}
	t.Run("all containers with a prefix", func(t *testing.T) {
		r := mustSucceed(t, "logs", "-n", ns, "talker", "--all-containers", "--prefix")
		want := "[pod/talker/app] app line 1\n[pod/talker/app] app line 2\n[pod/talker/app] app line 3\n[pod/talker/sidecar] sidecar line 1\n"
		if r.out != want {
			t.Fatalf("%s\nwant stdout %q", r, want)
		}
	})
	t.Run("selector", func(t *testing.T) {
		if _, err := env.cs.CoreV1().Pods(ns).Patch(context.Background(), "talker", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"talk"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		r := mustSucceed(t, "logs", "-n", ns, "-l", "app=talk", "-c", "sidecar")
		if r.out != "sidecar line 1\n" {
			t.Fatalf("%s", r)
		}
		// A selector shows the last 10 lines of each pod unless --tail says otherwise.
		if q := kubelet.lastQuery(); q.Get("tailLines") != "10" {
			t.Errorf("tailLines=%q, want 10", q.Get("tailLines"))
		}
		r = mustSucceed(t, "logs", "-n", ns, "-l", "app=nobody")
		if r.out != "" || r.err != "No resources found in "+ns+" namespace.\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("not found names the namespace", func(t *testing.T) {
		r := kubectl(t, "logs", "-n", ns, "nobody")
		want := `error: error from server (NotFound): pods "nobody" not found in namespace "` + ns + `"` + "\n"
		if r.code != 1 || r.err != want {
			t.Fatalf("%s\nwant stderr %q", r, want)
		}
		// As kubectl, the missing pod is reported before a bad flag value.
		r = kubectl(t, "logs", "-n", ns, "nobody", "--tail=-5")
		if r.code != 1 || r.err != want {
			t.Fatalf("%s\nwant stderr %q", r, want)
		}
	})
	t.Run("-f waits for the pod to be scheduled", func(t *testing.T) {
		late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "latecomer"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
		if _, err := env.cs.CoreV1().Pods(ns).Create(context.Background(), late, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := command(ctx, "logs", "-n", ns, "-f", "latecomer", "--pod-running-timeout=80s")
		var out strings.Builder
		stderr := &firstLine{seen: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = &out, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// kubectl shows each refusal while it waits, then follows.
		select {
		case <-stderr.seen:
		case <-ctx.Done():
			t.Fatal("no refusal shown")
		}
		if first := stderr.line(); first != "pod latecomer does not have a host assigned" {
			t.Fatalf("first stderr line %q", first)
		}
		runPod(t, ns, "latecomer", node, "10.244.2.3")
		if err := cmd.Wait(); err != nil || out.String() != "app line 1\napp line 2\napp line 3\n" {
			t.Fatalf("logs -f: %v, stdout %q", err, out.String())
		}
	})
	t.Run("the kubelet's reason", func(t *testing.T) {
		r := kubectl(t, "logs", "-n", ns, "talker", "-c", "sidecar", "--previous")
		want := `Error from server (BadRequest): previous terminated container "sidecar" in pod "talker" not found` + "\n"
		if r.code != 1 || r.err != want {
			t.Fatalf("%s\nwant stderr %q", r, want)
		}
	})
	t.Run("unknown container", func(t *testing.T) {
		r := kubectl(t, "logs", "-n", ns, "talker", "-c", "nope")
		if r.code != 1 || len(lines(r.err)) != 1 || !strings.Contains(r.err, "nope") {
			t.Fatalf("%s", r)
		}
	})
}

// firstLine collects a command's stderr and tells when a line is whole.
type firstLine struct {
	mu   sync.Mutex
	buf  strings.Builder
	seen chan struct{}
	once sync.Once
}

func (f *firstLine) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Write(b)
	if strings.Contains(f.buf.String(), "\n") {
		f.once.Do(func() { close(f.seen) })
	}
	return len(b), nil
}

func (f *firstLine) line() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, _, _ := strings.Cut(f.buf.String(), "\n")
	return l
}

func TestDescribe(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	node := createNode(t, "describe-"+ns, 0)
	pod := createPod(t, ns, "described", map[string]string{"app": "web"})
	runPod(t, ns, "described", node, "10.244.3.3")
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "described.1", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "described", UID: pod.UID, APIVersion: "v1"},
		Reason:         "Scheduled", Message: "Successfully assigned " + ns + "/described to " + node, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "default-scheduler"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}
	if _, err := env.cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := createDeployment(t, ns, "web", "busybox:1")
	rs := createReplicaSet(t, ns, d, "1", "busybox:1")

	tests := []struct {
		name  string
		args  []string
		want  []string // lines (trimmed of space runs) expected in this order
		event string   // the last line, when events are expected
	}{
		{"pod", []string{"pod", "described"},
			[]string{"Name: described", "Namespace: " + ns, "Node: " + node + "/127.0.0.1", "Labels: app=web", "Status: Running", "IP: 10.244.3.3", "Containers:", "app:", "Image: busybox", "Events:"},
			"Normal Scheduled"},
		{"node", []string{"node", node},
			[]string{"Name: " + node, "Conditions:", "Addresses:", "InternalIP: 127.0.0.1", "Non-terminated Pods:"}, ""},
		{"deployment", []string{"deployment", "web"},
			[]string{"Name: web", "Namespace: " + ns, "Selector: app=web", "Replicas: 1 desired", "Pod Template:", "Image: busybox:1"}, ""},
		{"replicaset", []string{"rs/" + rs}, []string{"Name: " + rs, "Controlled By: Deployment/web", "Replicas:", "Pod Template:"}, ""},
		{"namespace", []string{"namespace", ns}, []string{"Name: " + ns, "Status: Active"}, ""},
		{"name prefix", []string{"pod", "describ"}, []string{"Name: described"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"describe", "-n", ns}, tt.args...)...)
			var got []string
			for _, l := range lines(r.out) {
				got = append(got, strings.Join(strings.Fields(l), " "))
			}
			i := 0
			for _, l := range got {
				if i < len(tt.want) && strings.HasPrefix(l, tt.want[i]) {
					i++
				}
			}
			if i < len(tt.want) {
				t.Fatalf("missing %q (in order) in:\n%s", tt.want[i], r.out)
			}
			if tt.event != "" {
				last := got[len(got)-1]
				if !strings.HasPrefix(last, tt.event) || !strings.Contains(last, "default-scheduler") || !strings.HasSuffix(last, ev.Message) {
					t.Fatalf("last line %q is not the event; output:\n%s", last, r.out)
				}
				if hdr := got[len(got)-3]; hdr != "Type Reason Age From Message" {
					t.Fatalf("events header %q", hdr)
				}
			}
		})
	}
	t.Run("several objects: no events unless asked, missing ones reported after the rest", func(t *testing.T) {
		r := kubectl(t, "describe", "-n", ns, "pod/described", "deployment/web", "pod/zzz")
		if r.code != 1 || !strings.Contains(r.out, "Name:             described") || !strings.Contains(r.out, "Name:                   web") ||
			r.err != `Error from server (NotFound): pods "zzz" not found`+"\n" {
			t.Fatalf("%s", r)
		}
		if strings.Contains(r.out, "Events:") {
			t.Fatalf("events shown for several objects:\n%s", r.out)
		}
		r = mustSucceed(t, "describe", "-n", ns, "pod/described", "deployment/web", "--show-events")
		if !strings.Contains(r.out, "Scheduled") {
			t.Fatalf("--show-events given, events not shown:\n%s", r.out)
		}
		r = mustSucceed(t, "describe", "-n", ns, "pods", "-l", "app=nobody")
		if r.out != "" || r.err != "No resources found in "+ns+" namespace.\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("not found", func(t *testing.T) {
		r := kubectl(t, "describe", "-n", ns, "pod", "zzz")
		if r.code != 1 || r.err != `Error from server (NotFound): pods "zzz" not found`+"\n" {
			t.Fatalf("%s", r)
		}
	})
}

// createReplicaSet creates a ReplicaSet owned by d for one revision, as
// the deployment controller would.
func createReplicaSet(t *testing.T, ns string, d *appsv1.Deployment, revision, image string) string {
	t.Helper()
	hash := "h" + revision
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = map[string]string{"app": d.Name, appsv1.DefaultDeploymentUniqueLabelKey: hash}
	tmpl.Spec.Containers[0].Image = image
	isController := true
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Labels:          tmpl.Labels,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &isController}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: *tmpl,
		},
	}
	if _, err := env.cs.AppsV1().ReplicaSets(ns).Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating replicaset: %v", err)
	}
	return rs.Name
}

func TestScale(t *testing.T) {
	ns := namespace(t)
	createDeployment(t, ns, "web", "busybox:1")
	tests := []struct {
		name         string
		args         []string
		code         int
		want         string
		errPrefix    string
		wantReplicas int32
	}{
		{"scale up", []string{"deployment/web", "--replicas=3"}, 0, "deployment.apps/web scaled\n", "", 3},
		{"matching --current-replicas", []string{"deployment", "web", "--replicas=2", "--current-replicas=3"}, 0, "deployment.apps/web scaled\n", "", 2},
		{"wrong --current-replicas", []string{"deployment", "web", "--replicas=5", "--current-replicas=7"}, 1, "", "error: Expected replicas to be 7, was 2\n", 2},
		{"wrong --resource-version", []string{"deployment", "web", "--replicas=5", "--resource-version=1"}, 1, "", "error: Expected resource version to be 1, was ", 2},
		{"missing --replicas", []string{"deployment", "web"}, 1, "", "error: required flag(s) \"replicas\" not set\n", 2},
		{"-o name", []string{"deployment/web", "--replicas=4", "-o", "name"}, 0, "deployment.apps/web\n", "", 4},
		{"client dry run", []string{"deployment/web", "--replicas=1", "--dry-run=client"}, 0, "deployment.apps/web scaled (dry run)\n", "", 4},
		{"server dry run prints the new size", []string{"deployment/web", "--replicas=6", "--dry-run=server", "-o", "jsonpath={.spec.replicas}"}, 0, "6", "", 4},
		// No controller updates the status here: the wait runs out.
		{"--timeout waits for the status", []string{"deployment/web", "--replicas=5", "--timeout=1s"}, 1, "", "error: timed out waiting for \"web\" to be synced\n", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectl(t, append([]string{"scale", "-n", ns}, tt.args...)...)
			if r.code != tt.code || r.out != tt.want || !strings.HasPrefix(r.err, tt.errPrefix) || (tt.errPrefix == "") != (r.err == "") {
				t.Fatalf("%s\nwant exit %d stdout %q stderr %q...", r, tt.code, tt.want, tt.errPrefix)
			}
			if tt.code != 0 && len(lines(r.err)) != 1 {
				t.Errorf("stderr %q, want one line", r.err)
			}
			d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != tt.wantReplicas {
				t.Fatalf("replicas %d, want %d", *d.Spec.Replicas, tt.wantReplicas)
			}
		})
	}
}

// setDeploymentStatus reports a rollout with updated of replicas done.
func setDeploymentStatus(t *testing.T, ns, name string, updated int32) {
	t.Helper()
	d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: updated, ReadyReplicas: updated, AvailableReplicas: updated,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}},
	}
	if _, err := env.cs.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRollout(t *testing.T) {
	ns := namespace(t)
	d := createDeployment(t, ns, "web", "busybox:2")
	if _, err := env.cs.AppsV1().Deployments(ns).Patch(context.Background(), "web", "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"tier":"front"},"annotations":{"deployment.kubernetes.io/revision":"2"}},"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	createReplicaSet(t, ns, d, "1", "busybox:1")
	createReplicaSet(t, ns, d, "2", "busybox:2")

	t.Run("status waits for the rollout", func(t *testing.T) {
		setDeploymentStatus(t, ns, "web", 1)
		cmd, stdout := start(context.Background(), t, "rollout", "status", "-n", ns, "deployment/web")
		rd := bufio.NewReader(stdout)
		first, err := rd.ReadString('\n')
		if err != nil || first != `Waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated...`+"\n" {
			t.Fatalf("first line %q (%v)", first, err)
		}
		setDeploymentStatus(t, ns, "web", 2)
		var rest strings.Builder
		for {
			l, err := rd.ReadString('\n')
			rest.WriteString(l)
			if err != nil {
				break
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("rollout status: %v; output %q", err, rest.String())
		}
		if !strings.HasSuffix(rest.String(), `deployment "web" successfully rolled out`+"\n") {
			t.Fatalf("output after completion %q", rest.String())
		}
	})
	t.Run("status of a finished rollout", func(t *testing.T) {
		r := mustSucceed(t, "rollout", "status", "-n", ns, "deployment", "web")
		if r.out != `deployment "web" successfully rolled out`+"\n" {
			t.Fatalf("stdout %q", r.out)
		}
		// As kubectl: -l, and each object in turn.
		r = mustSucceed(t, "rollout", "status", "-n", ns, "deployments", "-l", "tier=front")
		if r.out != `deployment "web" successfully rolled out`+"\n" {
			t.Fatalf("status -l: %q", r.out)
		}
		r = kubectl(t, "rollout", "status", "-n", ns, "deployment/web", "deployment/nope")
		if r.code != 1 || r.out != `deployment "web" successfully rolled out`+"\n" || r.err != `Error from server (NotFound): deployments.apps "nope" not found`+"\n" {
			t.Fatalf("status of two, one missing: %s", r)
		}
	})
	t.Run("a file's kind the scheme does not know", func(t *testing.T) {
		// As kubectl's rollout commands, which read files into the
		// scheme's types: the document is reported, the others done.
		f := writeFile(t, t.TempDir(), "objs.yaml", "apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n---\n"+
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
		wantErr := `error: unable to decode "` + f + `": no kind "Widget" is registered for version "v1" in scheme`
		for _, sub := range []string{"status", "history"} {
			r := kubectl(t, "rollout", sub, "-n", ns, "-f", f)
			if r.code != 1 || !strings.HasPrefix(r.out, "deployment") || !strings.HasPrefix(r.err, wantErr) || len(lines(r.err)) != 1 {
				t.Fatalf("rollout %s: %s\nwant stderr starting %q", sub, r, wantErr)
			}
		}
	})
	t.Run("history", func(t *testing.T) {
		r := mustSucceed(t, "rollout", "history", "-n", ns, "deployment/web")
		got := table(r.out)
		want := [][]string{{"deployment.apps/web"}, {"REVISION", "CHANGE-CAUSE"}, {"1", "<none>"}, {"2", "<none>"}}
		if fmt.Sprint(got) != fmt.Sprint(want) || !strings.HasSuffix(r.out, "<none>\n\n") {
			t.Fatalf("history (ending with a blank line, as kubectl's):\n%s", r.out)
		}
		if r2 := mustSucceed(t, "rollout", "history", "-n", ns, "deployments", "-l", "tier=front"); r2.out != r.out {
			t.Fatalf("history -l:\n%s", r2.out)
		}
		r = mustSucceed(t, "rollout", "history", "-n", ns, "deployment/web", "-o", "name")
		if r.out != "replicaset.apps/web-h1\nreplicaset.apps/web-h2\n" {
			t.Fatalf("history -o name: %q", r.out)
		}
		r = mustSucceed(t, "rollout", "history", "-n", ns, "deployment/web", "--revision=2", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
		if r.out != "busybox:2" {
			t.Fatalf("history --revision=2 -o jsonpath: %q", r.out)
		}
		r = mustSucceed(t, "rollout", "history", "-n", ns, "deployment/web", "--revision=1")
		if !strings.HasPrefix(r.out, "deployment.apps/web with revision #1\n") || !strings.Contains(r.out, "busybox:1") {
			t.Fatalf("history --revision=1:\n%s", r.out)
		}
	})
	t.Run("undo", func(t *testing.T) {
		r := mustSucceed(t, "rollout", "undo", "-n", ns, "deployment/web", "--to-revision=1")
		if r.out != "deployment.apps/web rolled back\n" {
			t.Fatalf("stdout %q", r.out)
		}
		d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "busybox:1" {
			t.Fatalf("image after undo %q, want busybox:1", img)
		}
		// kubectl's dry runs: the suffix on the printed line, -o, a bare
		// --dry-run printing the template it would roll back to, and
		// nothing changed.
		r = mustSucceed(t, "rollout", "undo", "-n", ns, "deployment/web", "--to-revision=2", "--dry-run=server")
		if r.out != "deployment.apps/web rolled back (server dry run)\n" {
			t.Fatalf("undo --dry-run=server: %q", r.out)
		}
		r = mustSucceed(t, "rollout", "undo", "-n", ns, "deployment/web", "--to-revision=2", "--dry-run=server", "-o", "name")
		if r.out != "deployment.apps/web\n" {
			t.Fatalf("undo --dry-run=server -o name: %q", r.out)
		}
		dir := t.TempDir()
		writeFile(t, dir, "web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
		writeFile(t, dir, "kustomization.yaml", "namespace: "+ns+"\nresources: [web.yaml]\n")
		r = mustSucceed(t, "rollout", "undo", "-k", dir, "--to-revision=2", "--dry-run=server")
		if r.out != "deployment.apps/web rolled back (server dry run)\n" {
			t.Fatalf("undo -k --dry-run=server: %q", r.out)
		}
		r = mustSucceed(t, "rollout", "undo", "-n", ns, "deployment/web", "--to-revision=2", "--dry-run")
		if !strings.HasPrefix(r.out, "deployment.apps/web Pod Template:\n") || !strings.Contains(r.out, "busybox:2") || !strings.HasSuffix(r.out, " (dry run)\n") {
			t.Fatalf("undo --dry-run:\n%s", r.out)
		}
		if d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{}); err != nil || d.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
			t.Fatalf("a dry run rolled back: %v", err)
		}
		r = kubectl(t, "rollout", "undo", "-n", ns, "deployment/web", "--to-revision=9")
		if r.code != 1 || !strings.Contains(r.err, "unable to find specified revision 9 in history") {
			t.Fatalf("undo to a missing revision: %s", r)
		}
	})
	t.Run("restart", func(t *testing.T) {
		before, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := mustSucceed(t, "rollout", "restart", "-n", ns, "deployment/web")
		if r.out != "deployment.apps/web restarted\n" {
			t.Fatalf("stdout %q", r.out)
		}
		d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A new pod template: the deployment controller rolls every pod.
		if _, err := time.Parse(time.RFC3339, d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]); err != nil || d.Generation <= before.Generation {
			t.Fatalf("template annotations %v, generation %d -> %d", d.Spec.Template.Annotations, before.Generation, d.Generation)
		}
		r = kubectl(t, "rollout", "restart", "-n", ns, "configmap/nope")
		if r.code != 1 {
			t.Fatalf("restart of a configmap: %s", r)
		}
		// kubectl's words for a kind it cannot restart, and -o.
		r = kubectl(t, "rollout", "restart", "-n", ns, "replicaset/web-h1")
		if r.code != 1 || r.err != "error: replicasets.apps \"web-h1\" restarting is not supported\n" {
			t.Fatalf("restart of a replicaset: %s", r)
		}
		createDeployment(t, ns, "other", "busybox:1")
		if _, err := env.cs.AppsV1().Deployments(ns).Patch(context.Background(), "other", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"x"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		r = mustSucceed(t, "rollout", "restart", "-n", ns, "deployments", "-l", "tier=x", "-o", "name")
		if r.out != "deployment.apps/other\n" {
			t.Fatalf("restart -l -o name: %q", r.out)
		}
	})
	t.Run("pause and resume", func(t *testing.T) {
		steps := []struct {
			verb, out, err string
			code           int
			paused         bool
		}{
			{"pause", "deployment.apps/web paused\n", "", 0, true},
			{"pause", "", "error: deployments.apps \"web\" is already paused\n", 1, true},
			{"resume", "deployment.apps/web resumed\n", "", 0, false},
			{"resume", "", "error: deployments.apps \"web\" is not paused\n", 1, false},
		}
		for _, s := range steps {
			r := kubectl(t, "rollout", s.verb, "-n", ns, "deployment/web")
			if r.code != s.code || r.out != s.out || r.err != s.err {
				t.Fatalf("rollout %s: %s\nwant exit %d stdout %q stderr %q", s.verb, r, s.code, s.out, s.err)
			}
			d, err := env.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil || d.Spec.Paused != s.paused {
				t.Fatalf("after rollout %s: paused=%v (%v)", s.verb, d.Spec.Paused, err)
			}
		}
		// kubectl's -k and --field-manager.
		dir := t.TempDir()
		writeFile(t, dir, "web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
		writeFile(t, dir, "kustomization.yaml", "namespace: "+ns+"\nresources: [web.yaml]\n")
		for _, verb := range []string{"pause", "resume"} {
			r := mustSucceed(t, "rollout", verb, "-k", dir, "--field-manager=e2e")
			if want := "deployment.apps/web " + verb + "d\n"; r.out != want {
				t.Fatalf("rollout %s -k: %q, want %q", verb, r.out, want)
			}
		}
		r := kubectl(t, "rollout", "pause", "-n", ns, "replicaset/web-h1")
		if r.code != 1 || r.err != "error: replicasets.apps \"web-h1\" pausing is not supported\n" {
			t.Fatalf("%s", r)
		}
		mustSucceed(t, "rollout", "pause", "-n", ns, "deployment/web")
		r = kubectl(t, "rollout", "restart", "-n", ns, "deployment/web")
		if r.code != 1 || r.err != "error: deployments.apps \"web\" can't restart paused deployment (run rollout resume first)\n" {
			t.Fatalf("restart of a paused deployment: %s", r)
		}
		mustSucceed(t, "rollout", "resume", "-n", ns, "deployment/web")
		r = kubectl(t, "rollout", "pause", "-n", ns, "deployments", "-l", "app=none")
		if r.code != 0 || r.err != "No resources found in "+ns+" namespace.\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("misspelt subcommand", func(t *testing.T) {
		r := kubectl(t, "rollout", "restrat", "deployment/web")
		if r.code != 1 || r.err != "error: unknown command \"restrat deployment/web\"\nSee 'kubectl-lite rollout -h' for help and examples\n" {
			t.Fatalf("%s", r)
		}
	})
}

func TestWait(t *testing.T) {
	ns := namespace(t)
	createPod(t, ns, "slow", nil)
	// The finalizer keeps doomed after its delete until the test lets go,
	// so the waiting command surely sees it before it is gone.
	createConfigMap(t, ns, "doomed", nil, "kube-lite.test/hold")

	t.Run("condition becomes true", func(t *testing.T) {
		ch, stop := startLines(t, "wait", "-n", ns, "--for=condition=Ready", "pod/slow", "--timeout=90s")
		defer stop()
		runPod(t, ns, "slow", "", "10.244.4.4")
		if l := awaitLine(t, ch, "pod/slow"); l != "pod/slow condition met" {
			t.Fatalf("line %q", l)
		}
	})
	t.Run("condition already true", func(t *testing.T) {
		r := mustSucceed(t, "wait", "-n", ns, "--for=condition=ready", "pod", "slow")
		if r.out != "pod/slow condition met\n" {
			t.Fatalf("stdout %q", r.out)
		}
	})
	t.Run("delete", func(t *testing.T) {
		ch, stop := startLines(t, "wait", "-n", ns, "--for=delete", "configmap/doomed", "--timeout=90s")
		defer stop()
		if err := env.cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "doomed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if _, err := env.cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "doomed", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if l := awaitLine(t, ch, "configmap/doomed"); l != "configmap/doomed condition met" {
			t.Fatalf("line %q", l)
		}
	})
	t.Run("already gone", func(t *testing.T) {
		r := mustSucceed(t, "wait", "-n", ns, "--for=delete", "configmap/never-was")
		if r.out != "" {
			t.Fatalf("stdout %q", r.out)
		}
	})
	t.Run("check once with --timeout=0", func(t *testing.T) {
		createPod(t, ns, "never", nil)
		r := kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pod/never", "--timeout=0")
		if r.code != 1 || r.err != "error: condition not met for pods/never\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		r := kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pod/never", "--timeout=1s")
		if r.code != 1 || r.err != "error: timed out waiting for the condition on pods/never\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("jsonpath", func(t *testing.T) {
		r := mustSucceed(t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Running", "pod/slow")
		if r.out != "pod/slow condition met\n" {
			t.Fatalf("stdout %q", r.out)
		}
		r = mustSucceed(t, "wait", "-n", ns, "--for=jsonpath={.status.podIP}", "pod/slow", "-o", "name")
		if r.out != "pod/slow\n" {
			t.Fatalf("field exists, -o name: stdout %q", r.out)
		}
		r = kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Succeeded", "pod/slow", "--timeout=1s")
		if r.code != 1 || r.err != "error: timed out waiting for the condition on pods/slow\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("create", func(t *testing.T) {
		ch, stop := startLines(t, "wait", "-n", ns, "--for=create", "configmap/later", "--timeout=90s")
		defer stop()
		time.Sleep(time.Second)
		createConfigMap(t, ns, "later", nil)
		if l := awaitLine(t, ch, "configmap/later"); l != "configmap/later condition met" {
			t.Fatalf("line %q", l)
		}
	})
	t.Run("every object is waited for, errors come together", func(t *testing.T) {
		r := kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pods", "slow", "missing", "--timeout=5s")
		if r.code != 1 || r.out != "pod/slow condition met\n" || !strings.Contains(r.err, `pods "missing" not found`) {
			t.Fatalf("%s", r)
		}
	})
	t.Run("a file's missing object is reported and not waited for", func(t *testing.T) {
		f := writeFile(t, t.TempDir(), "objs.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nowhere}\n---\n"+
			"apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\n")
		r := kubectl(t, "wait", "-n", ns, "-f", f, "--for=jsonpath={.metadata.name}", "--timeout=10s")
		if r.code != 1 || r.out != "pod/slow condition met\n" || r.err != `Error from server (NotFound): configmaps "nowhere" not found`+"\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("create from a file", func(t *testing.T) {
		f := writeFile(t, t.TempDir(), "later.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later-file}\n")
		ch, stop := startLines(t, "wait", "-n", ns, "--for=create", "-f", f, "--timeout=90s")
		defer stop()
		time.Sleep(time.Second)
		createConfigMap(t, ns, "later-file", nil)
		if l := awaitLine(t, ch, "configmap/later-file"); l != "configmap/later-file condition met" {
			t.Fatalf("line %q", l)
		}
	})
	t.Run("bad --for", func(t *testing.T) {
		r := kubectl(t, "wait", "-n", ns, "--for=ready", "pod/never")
		if r.code != 1 || !strings.Contains(r.err, `unrecognized condition: "ready"`) {
			t.Fatalf("%s", r)
		}
	})
}
