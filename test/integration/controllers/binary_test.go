package controllers

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

// TestRunServesHealthAndMetrics runs the manager the way the binary does:
// from a kubeconfig file, with --bind-address serving /livez, /readyz and
// /metrics (workqueue series per controller).
func TestRunServesHealthAndMetrics(t *testing.T) {
	c := startWithoutManager(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: c.cfg.Host, CertificateAuthorityData: c.cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: c.cfg.BearerToken, ClientCertificateData: c.cfg.CertData, ClientKeyData: c.cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	o := manager.NewOptions()
	o.Kubeconfig = kubeconfig
	o.BindAddress = addr
	o.LeaderElection.Enabled = false
	o.Controllers = []string{"*", "-nodelifecycle"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	c.goUntilCleanup("controller-manager", o.Run)

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "/readyz", func() (bool, error) {
		code, _ := get("/readyz")
		return code == http.StatusOK, nil
	})
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez %d", code)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{`workqueue_adds_total{name="deployment"}`, `workqueue_depth{name="replicaset"}`, `workqueue_queue_duration_seconds_bucket{name="job"`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `name="nodelifecycle"`) {
		t.Errorf("/metrics has a queue of the disabled nodelifecycle controller")
	}
}
