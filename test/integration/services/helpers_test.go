// Package services tests Services' cluster IP and node port allocation,
// the kubernetes Service and the Endpoints and EndpointSlice resources
// against in-process apiservers on an embedded etcd.
package services

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// startServer starts an apiserver with cfg on etcd c (framework.StartEtcd),
// which other servers of the test may share.
func startServer(t *testing.T, c *clientv3.Client, cfg apiserver.Config) *framework.Server {
	t.Helper()
	return framework.StartAPIServer(t, framework.WithEtcd(c), framework.WithConfig(func(x *apiserver.Config) { *x = cfg }))
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
