package security_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-lite/kube-lite/pkg/kubectl/auth"
	"github.com/kube-lite/kube-lite/pkg/kubectl/root"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// TestKubectlCanI runs `kubectl-lite auth can-i` as the viewer.
func TestKubectlCanI(t *testing.T) {
	_, sec := startSecure(t, nil)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: sec.URL, CertificateAuthorityData: sec.CA.CertPEM}
	cfg.AuthInfos["viewer"] = &clientcmdapi.AuthInfo{Token: framework.ViewerToken}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "viewer", Namespace: "default"}
	cfg.CurrentContext = "c"
	kubeconfig := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"list", "pods"}, "yes"},
		{[]string{"get", "deployments.apps"}, "yes"},
		{[]string{"create", "pods"}, "no"},
		{[]string{"get", "secrets"}, "no"},
		{[]string{"get", "/apis"}, "yes"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := root.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
			cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "auth", "can-i"}, tc.args...))
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			err := cmd.ExecuteContext(context.Background())
			if got := strings.TrimSpace(out.String()); got != tc.want {
				t.Fatalf("printed %q, want %q (err %v, stderr %s)", got, tc.want, err, errOut.String())
			}
			if tc.want == "no" && !auth.IsDenied(err) || tc.want == "yes" && err != nil {
				t.Fatalf("exit error %v for %q", err, tc.want)
			}
		})
	}
}
