package security_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// BenchmarkCreateConfigMaps measures what authentication and authorization
// add to a create: no security, a system:masters certificate (the
// short-circuit) and a certificate user granted by RBAC.
func BenchmarkCreateConfigMaps(b *testing.B) {
	open := framework.StartAPIServer(b)
	s, sec := func() (*framework.Server, *framework.Security) {
		sec := &framework.Security{}
		return framework.StartAPIServer(b, framework.WithSecurity(sec)), sec
	}()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "editor"}},
	}
	if _, err := s.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	editor := sec.CertConfig(b, "editor")
	framework.WaitAllowed(b, editor, &authzv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "default"})
	for _, bc := range []struct {
		name string
		cfg  *rest.Config
	}{{"open", open.Config}, {"masters", sec.Admin}, {"rbac", editor}} {
		cs, err := kubernetes.NewForConfig(bc.cfg)
		if err != nil {
			b.Fatal(err)
		}
		cms := cs.CoreV1().ConfigMaps("default")
		// Names stay unique across the runs b.Run makes.
		var n atomic.Int64
		b.Run(bc.name, func(b *testing.B) {
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := bc.name + "-" + strconv.FormatInt(n.Add(1), 10)
					if _, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
