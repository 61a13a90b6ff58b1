package run_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kube-lite/kube-lite/pkg/kubectl/root"
)

// discovery is just enough of a server for kubectl run --dry-run=client to
// map a Pod: the core group with its pods.
var discovery = map[string]string{
	"/api":    `{"kind":"APIVersions","versions":["v1"]}`,
	"/apis":   `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`,
	"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","get","list"]}]}`,
}

// server counts the requests that reach it.
func server(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, ok := discovery[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// kubectlRun runs `kubectl-lite run` in process against url.
func kubectlRun(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no discovery cache from elsewhere
	t.Setenv("KUBECONFIG", "")
	var out bytes.Buffer
	cmd := root.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"--server=" + url, "run"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// TestRefusedBeforeAnyRequest: each bad input is refused with one line and
// not a single request reaches the server; a good one does reach it, so the
// count can tell.
func TestRefusedBeforeAnyRequest(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"uppercase image", []string{"web", "--image=NGINX"},
			`Invalid image name "NGINX": invalid reference format`},
		{"image with a space", []string{"web", "--image=nginx latest"},
			`Invalid image name "nginx latest": invalid reference format`},
		{"image with an empty tag", []string{"web", "--image=nginx:"},
			`Invalid image name "nginx:": invalid reference format`},
		{"image name over 255 characters", []string{"web", "--image=" + strings.Repeat("a", 256)},
			`Invalid image name "` + strings.Repeat("a", 256) + `": repository name must not be more than 255 characters`},
		{"unknown pull policy", []string{"web", "--image=nginx", "--image-pull-policy=Sometimes"},
			`invalid image pull policy: Sometimes`},
		{"uppercase name", []string{"Web", "--image=nginx"},
			`invalid name "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"dotted name (not a container name)", []string{"a.b", "--image=nginx"},
			`invalid name "a.b": must not contain dots`},
		{"exposed name starting with a digit (not a Service name)", []string{"1web", "--image=nginx", "--port=80", "--expose"},
			`invalid name "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{"label value with a space", []string{"web", "--image=nginx", "--labels=app=my web"},
			`invalid label value "my web" for key "app": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{"label key with two slashes", []string{"web", "--image=nginx", "-l", "a/b/c=x"},
			`invalid label key "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
		{"label without a value", []string{"web", "--image=nginx", "--labels=app"},
			`unexpected label spec: app`},
		{"attach", []string{"web", "--image=nginx", "-i", "-t", "--rm"},
			`--stdin, --tty, --rm: kube-lite does not serve pods/attach yet; run the pod without -i/--stdin, -t/--tty, --attach and --rm, and read its output with 'kubectl-lite logs -f web'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := server(t)
			out, err := kubectlRun(t, srv.URL, tt.args...)
			if err == nil || err.Error() != tt.want {
				t.Errorf("run %q: error %v\nwant %s", tt.args, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("run %q: the error is more than one line: %q", tt.args, err)
			}
			if out != "" {
				t.Errorf("run %q printed %q", tt.args, out)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("run %q sent %d requests, want none", tt.args, n)
			}
		})
	}

	t.Run("good input", func(t *testing.T) {
		srv, requests := server(t)
		out, err := kubectlRun(t, srv.URL, "web", "--image=kube-lite.local/busybox:1.35", "--image-pull-policy=Never",
			"--labels=app=web,tier=front", "--dry-run=client", "-o", "yaml")
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		for _, want := range []string{"  name: web\n", "    app: web\n", "  - image: kube-lite.local/busybox:1.35\n", "    imagePullPolicy: Never\n", "  restartPolicy: Always\n", "  dnsPolicy: ClusterFirst\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("run --dry-run=client -o yaml lacks %q:\n%s", want, out)
			}
		}
		if requests.Load() == 0 {
			t.Error("run with good input sent no request: the count cannot tell")
		}
	})
}
