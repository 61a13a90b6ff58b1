//go:build e2e

package kubectllite

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// comparablePod is what run decides about a pod, without what the server
// adds with names of its own (the service-account token volume).
func comparablePod(t *testing.T, ns, name string) (map[string]string, corev1.PodSpec) {
	t.Helper()
	p, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s/%s: %v", ns, name, err)
	}
	spec := p.Spec
	spec.Volumes = nil
	spec.Containers = append([]corev1.Container(nil), spec.Containers...)
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = nil
	}
	return p.Labels, spec
}

// TestRunLikeKubectl: run builds and creates the same pod as kubectl from
// the same flags, prints the same, and fails the same way.
func TestRunLikeKubectl(t *testing.T) {
	tw := newTwins(t)
	args := []string{"run", "web", "--image=kube-lite.local/busybox:1.35", "--restart=Never", "--env=GREETING=hi",
		"--port=8080", "--labels=app=web,tier=front", "--image-pull-policy=IfNotPresent", "--command", "--", "sleep", "3600"}
	if r := tw.same(t, args...); r.code != 0 || r.out != "pod/web created\n" {
		t.Fatalf("run: %s", r)
	}
	liteLabels, liteSpec := comparablePod(t, tw.lite, "web")
	upLabels, upSpec := comparablePod(t, tw.up, "web")
	if !reflect.DeepEqual(liteLabels, upLabels) || !reflect.DeepEqual(liteSpec, upSpec) {
		t.Errorf("run made a different pod than kubectl's:\nkubectl-lite: %v %+v\nkubectl: %v %+v", liteLabels, liteSpec, upLabels, upSpec)
	}
	c := liteSpec.Containers[0]
	if c.Name != "web" || c.Image != "kube-lite.local/busybox:1.35" || !reflect.DeepEqual(c.Command, []string{"sleep", "3600"}) ||
		c.ImagePullPolicy != corev1.PullIfNotPresent || len(c.Env) != 1 || c.Env[0].Value != "hi" ||
		len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || liteSpec.RestartPolicy != corev1.RestartPolicyNever ||
		liteLabels["tier"] != "front" {
		t.Errorf("run's pod does not have the flags' values: %v %+v", liteLabels, liteSpec)
	}

	// Without --command the words are the image's arguments; without
	// --labels the pod is labelled run=NAME.
	tw.same(t, "run", "args", "--image=kube-lite.local/busybox:1.35", "--dry-run=client", "-o", "yaml", "--", "sleep", "1")
	tw.same(t, "run", "srv", "--image=kube-lite.local/busybox:1.35", "--dry-run=server", "-o", "name")
	// --expose creates a Service selecting the pod too.
	if r := tw.same(t, "run", "front", "--image=kube-lite.local/busybox:1.35", "--port=80", "--expose"); r.out != "service/front created\npod/front created\n" {
		t.Errorf("run --expose: %s", r)
	}
	for _, ns := range []string{tw.lite, tw.up} {
		svc, err := env.cs.CoreV1().Services(ns).Get(context.Background(), "front", metav1.GetOptions{})
		if err != nil || svc.Spec.Selector["run"] != "front" || svc.Spec.Ports[0].Port != 80 {
			t.Errorf("run --expose in %s: service %+v, %v", ns, svc, err)
		}
	}
	// The server's refusal, and kubectl's own usage errors, are kubectl's.
	if r := tw.same(t, args...); r.code != 1 || r.err != "Error from server (AlreadyExists): pods \"web\" already exists\n" {
		t.Errorf("run of an existing pod: %s", r)
	}
	tw.same(t, "run", "x", "--image=nginx", "--restart=Sometimes")
	tw.same(t, "run", "--image=nginx")
	tw.same(t, "run", "x", "--image=nginx", "--expose")
	// An image that kubectl refuses itself is refused in its words.
	if r := tw.same(t, "run", "x", "--image=NGINX"); r.code != 1 || r.err != "error: Invalid image name \"NGINX\": invalid reference format\n" {
		t.Errorf("run --image=NGINX: %s", r)
	}
}

// TestRunRefusesBadInputWithoutARequest: each bad input is one line on
// stderr and exit 1, and no request reaches the server; a good input does
// reach it, so the count can tell.
func TestRunRefusesBadInputWithoutARequest(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	// No kubeconfig: --server alone points at the counting server.
	inv := invocation{env: []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--image=NGINX"}, `error: Invalid image name "NGINX": invalid reference format`},
		{[]string{"--image=registry:5000/app:"}, `error: Invalid image name "registry:5000/app:": invalid reference format`},
		{[]string{"--image=" + strings.Repeat("a", 256)}, `error: Invalid image name "` + strings.Repeat("a", 256) + `": repository name must not be more than 255 characters`},
		{[]string{"--image=nginx", "--image-pull-policy=always"}, `error: invalid image pull policy: always`},
		{[]string{"--image=nginx", "--labels=app=a b"}, `error: invalid label value "a b" for key "app": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{[]string{"--image=nginx", "-l", "-bad=x"}, `error: invalid label key "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{[]string{"--image=nginx", "-it"}, `error: --stdin, --tty: kube-lite does not serve pods/attach yet; run the pod without -i/--stdin, -t/--tty, --attach and --rm, and read its output with 'kubectl-lite logs -f NAME'`},
	} {
		requests.Store(0)
		// NAME is filled in below; the name itself must be good here.
		args := append([]string{"--server=" + srv.URL, "run", "web"}, tt.args...)
		r := kubectlWith(t, inv, args...)
		want := strings.ReplaceAll(tt.want, "logs -f NAME", "logs -f web")
		if r.code != 1 || r.out != "" || r.err != want+"\n" {
			t.Errorf("run %q: %s\nwant stderr %q", tt.args, r, want)
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("run %q sent %d requests, want none", tt.args, n)
		}
	}
	requests.Store(0)
	r := kubectlWith(t, inv, "--server="+srv.URL, "run", "Web", "--image=nginx")
	if want := "error: invalid name \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n"; r.code != 1 || r.err != want || requests.Load() != 0 {
		t.Errorf("run Web: %s, %d requests\nwant stderr %q and none", r, requests.Load(), want)
	}

	r = kubectlWith(t, inv, "--server="+srv.URL, "run", "web", "--image=kube-lite.local/busybox:1.35", "--image-pull-policy=Never")
	if r.code == 0 || requests.Load() == 0 {
		t.Errorf("run with good input against a server that has nothing: %s, %d requests; want a failure after requests", r, requests.Load())
	}
}
