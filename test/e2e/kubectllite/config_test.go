//go:build e2e

package kubectllite

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-lite/kube-lite/pkg/version"
)

// deadServer is a URL nothing listens on: a kubeconfig pointing there
// fails if it is (wrongly) the one used.
func deadServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

// Each kubeconfig's context defaults to its own namespace, holding one
// configmap named after the source: the listing tells which file was used.
func TestKubeconfigResolutionOrder(t *testing.T) {
	sources := []string{"flag", "env", "home"}
	nss := map[string]string{}
	for _, s := range sources {
		nss[s] = namespace(t)
		createConfigMap(t, nss[s], "from-"+s, nil)
	}
	dir := t.TempDir()
	flagFile := filepath.Join(dir, "flag.kubeconfig")
	envFile := filepath.Join(dir, "env.kubeconfig")
	home := filepath.Join(dir, "home")
	homeFile := filepath.Join(home, ".kube", "config")
	if err := os.MkdirAll(filepath.Dir(homeFile), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, path := range map[string]string{"flag": flagFile, "env": envFile, "home": homeFile} {
		if err := writeKubeconfig(path, kubeconfigSpec{context: "ctx-" + src, namespace: nss[src]}); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"flag beats env and home", []string{"HOME=" + home, "KUBECONFIG=" + envFile}, []string{"--kubeconfig", flagFile}, "flag"},
		{"env beats home", []string{"HOME=" + home, "KUBECONFIG=" + envFile}, nil, "env"},
		{"home when nothing else", []string{"HOME=" + home, "KUBECONFIG="}, nil, "home"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectlWith(t, invocation{env: tt.env}, append(tt.args, "get", "configmaps", "-o", "name")...)
			if r.code != 0 || r.out != "configmap/from-"+tt.want+"\n" {
				t.Fatalf("%s\nwant configmap/from-%s", r, tt.want)
			}
			r = kubectlWith(t, invocation{env: tt.env}, append(tt.args, "config", "current-context")...)
			if r.out != "ctx-"+tt.want+"\n" {
				t.Fatalf("current-context %q, want ctx-%s", r.out, tt.want)
			}
		})
	}

	t.Run("KUBECONFIG is a merged path list", func(t *testing.T) {
		// The first file names the current context, which only the
		// second file defines: only a merge makes this work.
		first := filepath.Join(dir, "first.kubeconfig")
		cfg := api.NewConfig()
		cfg.CurrentContext = "ctx-env"
		if err := clientcmd.WriteToFile(*cfg, first); err != nil {
			t.Fatal(err)
		}
		r := kubectlWith(t, invocation{env: []string{"HOME=" + home, "KUBECONFIG=" + first + ":" + envFile}}, "get", "configmaps", "-o", "name")
		if r.code != 0 || r.out != "configmap/from-env\n" {
			t.Fatalf("%s", r)
		}
		r = kubectlWith(t, invocation{env: []string{"HOME=" + home, "KUBECONFIG=" + first + ":" + envFile}}, "config", "get-contexts", "-o", "name")
		if r.out != "ctx-env\n" {
			t.Fatalf("contexts %q", r.out)
		}
	})
}

func TestKubeconfigOverrideFlags(t *testing.T) {
	nsA, nsB := namespace(t), namespace(t)
	createConfigMap(t, nsA, "in-a", nil)
	createConfigMap(t, nsB, "in-b", nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "two.kubeconfig")
	// ctx-a (current) reaches the server; ctx-broken points nowhere.
	good := filepath.Join(dir, "good.kubeconfig")
	if err := writeKubeconfig(good, kubeconfigSpec{context: "ctx-a", namespace: nsA}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["ctx-b"] = &api.Context{Cluster: "ctx-a-cluster", AuthInfo: "ctx-a-user", Namespace: nsB}
	cfg.Clusters["dead"] = &api.Cluster{Server: deadServer(t), CertificateAuthorityData: env.caPEM}
	cfg.Contexts["ctx-broken"] = &api.Context{Cluster: "dead", AuthInfo: "ctx-a-user", Namespace: nsA}
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"current context", nil, "configmap/in-a\n"},
		{"--context", []string{"--context", "ctx-b"}, "configmap/in-b\n"},
		{"-n beats the context's namespace", []string{"--context", "ctx-b", "-n", nsA}, "configmap/in-a\n"},
		{"--cluster repairs a broken context", []string{"--context", "ctx-broken", "--cluster", "ctx-a-cluster"}, "configmap/in-a\n"},
		{"--server repairs a broken context", []string{"--context", "ctx-broken", "--server", env.serverURL}, "configmap/in-a\n"},
		{"--user picks the credentials", []string{"--context", "ctx-b", "--user", "ctx-a-user"}, "configmap/in-b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectl(t, append([]string{"--kubeconfig", file, "get", "configmaps", "-o", "name"}, tt.args...)...)
			if r.code != 0 || r.out != tt.want {
				t.Fatalf("%s\nwant %q", r, tt.want)
			}
		})
	}
	t.Run("a broken context fails", func(t *testing.T) {
		r := kubectl(t, "--kubeconfig", file, "--context", "ctx-broken", "get", "configmaps")
		if r.code != 1 || !strings.Contains(r.err, "connection refused") {
			t.Fatalf("%s", r)
		}
	})
	t.Run("config get-contexts", func(t *testing.T) {
		r := mustSucceed(t, "--kubeconfig", file, "config", "get-contexts")
		want := [][]string{{"CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"},
			{"*", "ctx-a", "ctx-a-cluster", "ctx-a-user", nsA}, {"ctx-b", "ctx-a-cluster", "ctx-a-user", nsB}, {"ctx-broken", "dead", "ctx-a-user", nsA}}
		if got := table(r.out); !equalRows(got, want) {
			t.Fatalf("got:\n%s", r.out)
		}
	})
	t.Run("config use-context", func(t *testing.T) {
		r := mustSucceed(t, "--kubeconfig", file, "config", "use-context", "ctx-b")
		if r.out != "Switched to context \"ctx-b\".\n" {
			t.Fatalf("stdout %q", r.out)
		}
		if r := mustSucceed(t, "--kubeconfig", file, "get", "configmaps", "-o", "name"); r.out != "configmap/in-b\n" {
			t.Fatalf("after use-context: %q", r.out)
		}
		saved, err := clientcmd.LoadFromFile(file)
		if err != nil || saved.CurrentContext != "ctx-b" {
			t.Fatalf("file's current-context %q (%v)", saved.CurrentContext, err)
		}
		r = kubectl(t, "--kubeconfig", file, "config", "use-context", "nope")
		if r.code != 1 || r.err != "error: no context exists with the name: \"nope\"\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("config view", func(t *testing.T) {
		r := mustSucceed(t, "--kubeconfig", file, "config", "view", "--minify", "-o", "json")
		var v struct {
			Contexts []struct{ Name string } `json:"contexts"`
		}
		if err := json.Unmarshal([]byte(r.out), &v); err != nil || len(v.Contexts) != 1 || v.Contexts[0].Name != "ctx-b" {
			t.Fatalf("contexts %+v (%v) in:\n%s", v.Contexts, err, r.out)
		}
		if strings.Contains(r.out, "ctx-broken") || !strings.Contains(r.out, `"current-context": "ctx-b"`) {
			t.Fatalf("--minify should keep only ctx-b:\n%s", r.out)
		}
		if env.token != "" && (strings.Contains(r.out, env.token) || !strings.Contains(r.out, "REDACTED")) {
			t.Fatalf("the token is not redacted:\n%s", r.out)
		}
		if !strings.Contains(r.out, "DATA+OMITTED") {
			t.Fatalf("certificate data not omitted:\n%s", r.out)
		}
		raw := mustSucceed(t, "--kubeconfig", file, "config", "view", "--raw")
		if env.token != "" && !strings.Contains(raw.out, env.token) {
			t.Fatalf("--raw hides the token:\n%s", raw.out)
		}
		if !strings.Contains(raw.out, "certificate-authority-data: LS0t") {
			t.Fatalf("--raw hides the CA:\n%s", raw.out)
		}
	})
}

func equalRows(got, want [][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if strings.Join(got[i], " ") != strings.Join(want[i], " ") {
			return false
		}
	}
	return true
}

// --server and --token reach whatever server they name, with that token.
func TestServerAndTokenFlags(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	fake := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"major":"1","minor":"99","gitVersion":"v1.99.0-fake"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer fake.Close()
	r := kubectl(t, "version", "--server", fake.URL, "--token", "s3cret", "--insecure-skip-tls-verify")
	if r.code != 0 || !strings.Contains(r.out, "Server Version: v1.99.0-fake\n") {
		t.Fatalf("%s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[len(auth)-1] != "/version Bearer s3cret" {
		t.Fatalf("the fake server saw %q", auth)
	}
}

func TestDiscoveryCache(t *testing.T) {
	home := t.TempDir()
	inv := invocation{env: []string{"HOME=" + home}}
	if r := kubectlWith(t, inv, "get", "namespaces", "-o", "name"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	host := strings.ReplaceAll(strings.TrimPrefix(env.serverURL, "https://"), ":", "_")
	groups := filepath.Join(home, ".kube", "cache", "discovery", host, "servergroups.json")
	data, err := os.ReadFile(groups)
	if err != nil {
		t.Fatalf("no discovery cache: %v", err)
	}
	if !strings.Contains(string(data), `"apps"`) {
		t.Fatalf("cached groups lack apps: %s", data)
	}
	// A stale cache that lacks a group is refreshed when a resource of that
	// group is asked for.
	var list map[string]interface{}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var kept []interface{}
	for _, g := range list["groups"].([]interface{}) {
		if g.(map[string]interface{})["name"] != "apps" {
			kept = append(kept, g)
		}
	}
	list["groups"] = kept
	stale, _ := json.Marshal(list)
	if err := os.WriteFile(groups, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	createDeployment(t, ns, "cached", "busybox")
	r := kubectlWith(t, inv, "get", "deployments", "-n", ns, "-o", "name")
	if r.code != 0 || r.out != "deployment.apps/cached\n" {
		t.Fatalf("%s", r)
	}
	data, err = os.ReadFile(groups)
	if err != nil || !strings.Contains(string(data), `"apps"`) {
		t.Fatalf("the cache was not refreshed: %s (%v)", data, err)
	}
}

func TestAPIResources(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    [][]string
		notWant string
	}{
		{"all", nil, [][]string{{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}, {"pods", "po", "v1", "true", "Pod"}, {"nodes", "no", "v1", "false", "Node"}, {"deployments", "deploy", "apps/v1", "true", "Deployment"}}, ""},
		{"cluster-scoped", []string{"--namespaced=false"}, [][]string{{"nodes", "no", "v1", "false", "Node"}, {"namespaces", "ns", "v1", "false", "Namespace"}}, "Pod\n"},
		{"one group", []string{"--api-group=apps"}, [][]string{{"deployments", "deploy", "apps/v1", "true", "Deployment"}, {"replicasets", "rs", "apps/v1", "true", "ReplicaSet"}}, "Pod\n"},
		{"names", []string{"-o", "name"}, [][]string{{"pods"}, {"deployments.apps"}}, "NAME"},
		// kubectl joins the verbs with commas, not Go's [a b] list.
		{"wide", []string{"-o", "wide", "--api-group=apps"}, [][]string{{"deployments", "deploy", "apps/v1", "true", "Deployment", "create,delete,deletecollection,get,list,patch,update,watch", "all"}}, "[create"},
		{"verbs", []string{"--verbs=list,watch"}, [][]string{{"pods", "po", "v1", "true", "Pod"}}, "selfsubjectaccessreviews"},
		{"categories", []string{"--categories=all", "-o", "name"}, [][]string{{"pods"}, {"deployments.apps"}}, "configmaps"},
	}
	t.Run("sort by kind", func(t *testing.T) {
		r := mustSucceed(t, "api-resources", "--sort-by=kind", "--no-headers", "-o", "name")
		got := lines(r.out)
		if len(got) < 3 || got[0] != "bindings" || got[1] != "clusterroles.rbac.authorization.k8s.io" || got[2] != "clusterrolebindings.rbac.authorization.k8s.io" {
			t.Fatalf("first by kind %q, want Binding, ClusterRole, then ClusterRoleBinding:\n%s", got, r.out)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"api-resources"}, tt.args...)...)
			rows := map[string]bool{}
			for _, row := range table(r.out) {
				rows[strings.Join(row, " ")] = true
			}
			for _, w := range tt.want {
				if !rows[strings.Join(w, " ")] {
					t.Errorf("missing row %v in:\n%s", w, r.out)
				}
			}
			if tt.notWant != "" && strings.Contains(r.out, tt.notWant) {
				t.Errorf("unexpected %q in:\n%s", tt.notWant, r.out)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	sv, err := env.cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	r := mustSucceed(t, "version")
	if r.out != "Client Version: "+version.GitVersion+"\nServer Version: "+version.GitVersion+"\n" || sv.GitVersion != version.GitVersion {
		t.Fatalf("stdout %q", r.out)
	}
	r = kubectlWith(t, invocation{env: []string{"KUBECONFIG=/nonexistent"}}, "version", "--client")
	if r.code != 0 || r.out != "Client Version: v1.36.3-kube-lite\n" {
		t.Fatalf("--client needs no server: %s", r)
	}
	r = mustSucceed(t, "version", "-o", "json")
	var v struct {
		ClientVersion, ServerVersion struct{ GitVersion string }
	}
	if err := json.Unmarshal([]byte(r.out), &v); err != nil || v.ServerVersion.GitVersion != sv.GitVersion || v.ClientVersion.GitVersion == "" {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}
}

// TestRawAPIVersionsClusterInfo: get --raw, api-versions and cluster-info
// answer as kubectl's do.
func TestRawAPIVersionsClusterInfo(t *testing.T) {
	r := mustSucceed(t, "get", "--raw", "/version")
	var v struct{ GitVersion string }
	if err := json.Unmarshal([]byte(r.out), &v); err != nil || v.GitVersion != version.GitVersion {
		t.Fatalf("get --raw /version: %v\n%s", err, r)
	}
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"get", "--raw", "/nope"}, "Error from server (NotFound): the server could not find the requested resource\n"},
		{[]string{"get", "--raw", "/version", "pods"}, "error: arguments may not be passed when --raw is specified\n"},
		{[]string{"get", "--raw", "/version", "-o", "yaml"}, "error: --raw and --output are mutually exclusive\n"},
	} {
		r := kubectl(t, tt.args...)
		if r.code != 1 || r.out != "" || r.err != tt.err {
			t.Fatalf("%v: %s\nwant stderr %q", tt.args, r, tt.err)
		}
	}
	r = mustSucceed(t, "api-versions")
	if got := lines(r.out); len(got) < 3 || got[0] != "admissionregistration.k8s.io/v1" || got[len(got)-1] != "v1" || !strings.Contains(r.out, "\napps/v1\n") {
		t.Fatalf("api-versions: %s", r)
	}
	r = mustSucceed(t, "cluster-info")
	if !strings.Contains(r.out, "Kubernetes control plane") || !strings.Contains(r.out, "is running at") {
		t.Fatalf("cluster-info: %s", r)
	}
}

func TestAuthCanI(t *testing.T) {
	groups, err := env.cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	served := false
	for _, g := range groups.Groups {
		served = served || g.Name == "authorization.k8s.io"
	}
	if !served || env.token == "" {
		// Without the API, can-i reports the server's answer as an error.
		r := kubectl(t, "auth", "can-i", "create", "pods")
		if r.code != 1 || len(lines(r.err)) != 1 || !strings.HasPrefix(r.err, "Error from server (NotFound)") {
			t.Fatalf("%s", r)
		}
		t.Skip("the apiserver serves no authorization.k8s.io (SelfSubjectAccessReview); checked the error only")
	}
	viewer := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := writeKubeconfig(viewer, kubeconfigSpec{context: "viewer", token: viewerToken}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
		code       int
	}{
		{"admin may create pods", env.kubeconfig, []string{"create", "pods"}, "yes\n", 0},
		{"admin may get a named deployment", env.kubeconfig, []string{"get", "deployments.apps/web"}, "yes\n", 0},
		{"admin, non-resource URL", env.kubeconfig, []string{"get", "/healthz"}, "yes\n", 0},
		{"viewer may not delete nodes", viewer, []string{"delete", "nodes"}, "no\n", 1},
		{"quiet", viewer, []string{"delete", "nodes", "-q"}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectlWith(t, invocation{env: []string{"KUBECONFIG=" + tt.kubeconfig}}, append([]string{"auth", "can-i"}, tt.args...)...)
			if r.code != tt.code || r.out != tt.want {
				t.Fatalf("%s\nwant exit %d stdout %q", r, tt.code, tt.want)
			}
		})
	}
	t.Run("warnings for an unknown verb and a cluster-scoped kind", func(t *testing.T) {
		r := kubectl(t, "auth", "can-i", "fly", "nodes", "-n", "default")
		want := "Warning: resource 'nodes' is not namespace scoped\n\nWarning: verb 'fly' is not a known verb\n\n"
		if r.code != 0 || r.out != "yes\n" || r.err != want {
			t.Fatalf("%s\nwant stderr %q", r, want)
		}
	})
	t.Run("missing arguments", func(t *testing.T) {
		r := kubectl(t, "auth", "can-i", "get")
		want := "error: you must specify two arguments: verb resource or verb resource/resourceName.\nSee 'kubectl auth can-i -h' for help and examples.\n"
		if r.code != 1 || r.err != want {
			t.Fatalf("%s\nwant stderr %q", r, want)
		}
	})
	t.Run("--list", func(t *testing.T) {
		// A SelfSubjectRulesReview: the admin may do anything, the
		// viewer only what every authenticated user may.
		r := mustSucceed(t, "auth", "can-i", "--list")
		rows := table(r.out)
		if len(rows) < 2 || strings.Join(rows[0], " ") != "Resources Non-Resource URLs Resource Names Verbs" {
			t.Fatalf("%s", r)
		}
		if !strings.Contains(r.out, "*.*  ") || !strings.Contains(r.out, "[*]") {
			t.Fatalf("admin's wildcard rule missing:\n%s", r.out)
		}
		r = kubectlWith(t, invocation{env: []string{"KUBECONFIG=" + viewer}}, "auth", "can-i", "--list", "--no-headers")
		if r.code != 0 || strings.Contains(r.out, "Resources") || !strings.Contains(r.out, "selfsubjectaccessreviews.authorization.k8s.io") || strings.Contains(r.out, "*.*  ") {
			t.Fatalf("%s", r)
		}
	})
	t.Run("whoami", func(t *testing.T) {
		r := kubectlWith(t, invocation{env: []string{"KUBECONFIG=" + viewer}}, "auth", "whoami")
		want := [][]string{{"ATTRIBUTE", "VALUE"}, {"Username", "viewer"}, {"UID", "viewer-uid"}, {"Groups", "[system:authenticated]"}}
		if r.code != 0 || !equalRows(table(r.out), want) {
			t.Fatalf("%s", r)
		}
		r = mustSucceed(t, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if r.out != "admin" {
			t.Fatalf("%s", r)
		}
	})
}

// The config subcommands edit the kubeconfig the way kubectl does, with
// kubectl's messages; set-context --current --namespace is what most users
// run.
func TestConfigEdits(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "in-ns", nil)
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(file, kubeconfigSpec{context: "ctx"}); err != nil {
		t.Fatal(err)
	}
	loaded, err := clientcmd.LoadFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cluster, user := loaded.Contexts["ctx"].Cluster, loaded.Contexts["ctx"].AuthInfo
	steps := []struct {
		args     []string
		out, err string
		code     int
	}{
		{[]string{"set-context", "--current", "--namespace=" + ns}, "Context \"ctx\" modified.\n", "", 0},
		{[]string{"get-clusters"}, "NAME\n" + cluster + "\n", "", 0},
		{[]string{"get-users"}, "NAME\n" + user + "\n", "", 0},
		{[]string{"set-cluster", "c2", "--server=https://192.0.2.1"}, "Cluster \"c2\" set.\n", "", 0},
		{[]string{"set-credentials", "u2", "--token=abc"}, "User \"u2\" set.\n", "", 0},
		{[]string{"set-context", "other", "--cluster=c2", "--user=u2"}, "Context \"other\" created.\n", "", 0},
		{[]string{"set", "contexts.other.namespace", "kube-system"}, "Property \"contexts.other.namespace\" set.\n", "", 0},
		{[]string{"view", "-o", "jsonpath={.contexts[?(@.name==\"other\")].context.namespace}"}, "kube-system", "", 0},
		{[]string{"unset", "contexts.other.namespace"}, "Property \"contexts.other.namespace\" unset.\n", "", 0},
		{[]string{"rename-context", "other", "renamed"}, "Context \"other\" renamed to \"renamed\".\n", "", 0},
		{[]string{"delete-context", "renamed"}, "deleted context renamed from " + file + "\n", "", 0},
		{[]string{"delete-context", "nope"}, "", "error: cannot delete context nope, not in " + file + "\n", 1},
		{[]string{"delete-cluster", "c2"}, "deleted cluster c2 from " + file + "\n", "", 0},
		{[]string{"delete-user", "u2"}, "deleted user u2 from " + file + "\n", "", 0},
		{[]string{"bogus"}, "", "error: unknown command \"bogus\"\nSee 'kubectl-lite config -h' for help and examples\n", 1},
	}
	for _, s := range steps {
		r := kubectl(t, append([]string{"--kubeconfig", file, "config"}, s.args...)...)
		if r.code != s.code || r.out != s.out || r.err != s.err {
			t.Fatalf("config %s: %s\nwant exit %d, stdout %q, stderr %q", strings.Join(s.args, " "), r, s.code, s.out, s.err)
		}
	}
	// The namespace set on the current context is the one commands use.
	if r := mustSucceed(t, "--kubeconfig", file, "get", "configmaps", "-o", "name"); r.out != "configmap/in-ns\n" {
		t.Fatalf("after set-context --current: %q", r.out)
	}
	saved, err := clientcmd.LoadFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Contexts) != 1 || len(saved.Clusters) != 1 || len(saved.AuthInfos) != 1 || saved.Contexts["ctx"].Namespace != ns {
		t.Fatalf("kubeconfig left with contexts %v clusters %v users %v", saved.Contexts, saved.Clusters, saved.AuthInfos)
	}
}
