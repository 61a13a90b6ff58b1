// Package services tests Services' cluster IP and node port allocation,
// the kubernetes Service and the Endpoints and EndpointSlice resources
// against in-process apiservers on an embedded etcd.
package services

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/etcd"
)

// startEtcd starts an embedded etcd for the test and returns a client.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		cancel()
		t.Fatalf("start etcd: %v", err)
	}
	c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		cancel()
		e.Stop()
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(); e.Stop(); cancel() })
	return c
}

// server is one running apiserver.
type server struct {
	client kubernetes.Interface
	config *rest.Config
	stop   func()
}

// startServer starts an apiserver on etcd with cfg (its Etcd set here);
// it stops at the test's end or at stop.
func startServer(t *testing.T, c *clientv3.Client, cfg apiserver.Config) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Etcd = c
	api, err := apiserver.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("assemble apiserver: %v", err)
	}
	if err := api.Bootstrap(ctx); err != nil {
		cancel()
		t.Fatalf("bootstrap apiserver: %v", err)
	}
	srv := httptest.NewUnstartedServer(api.Handler())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		srv.CloseClientConnections()
		srv.Close()
	}
	t.Cleanup(stop)
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfgREST := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: cert}, QPS: 1000, Burst: 2000}
	cs, err := kubernetes.NewForConfig(cfgREST)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &server{client: cs, config: cfgREST, stop: stop}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newService(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// claims counts the cluster IP and node port claims in etcd.
func claims(t *testing.T, c *clientv3.Client) int64 {
	t.Helper()
	resp, err := c.Get(context.Background(), "/registry/ranges/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}
