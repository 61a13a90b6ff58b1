// Package security_test checks authentication and authorization on a real
// apiserver: every case asserts the HTTP code and Status reason a client sees.
package security_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startSecure(t *testing.T, configure func(sec *framework.Security)) (*framework.Server, *framework.Security) {
	t.Helper()
	sec := &framework.Security{}
	if configure != nil {
		configure(sec)
	}
	s := framework.StartAPIServer(t, framework.WithSecurity(sec))
	return s, sec
}

func client(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// wantStatus checks err is an API Status with code and reason; code 200
// means no error.
func wantStatus(t *testing.T, what string, err error, code int32, reason metav1.StatusReason) *metav1.Status {
	t.Helper()
	if code == 200 {
		if err != nil {
			t.Fatalf("%s: want success, got %v", what, err)
		}
		return nil
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		t.Fatalf("%s: want %d %s, got %v", what, code, reason, err)
	}
	st := se.Status()
	if st.Code != code || st.Reason != reason {
		t.Fatalf("%s: want %d %s, got %d %s: %s", what, code, reason, st.Code, st.Reason, st.Message)
	}
	return &st
}

func createNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(ctxT(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

// ensureServiceAccount creates a service account unless it exists (the
// ServiceAccount admission plugin may have made "default" already).
func ensureServiceAccount(t *testing.T, cs kubernetes.Interface, name string) *corev1.ServiceAccount {
	t.Helper()
	ctx := ctxT(t)
	sa, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		sa, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("service account %s: %v", name, err)
	}
	return sa
}

func boundPod(name, node string, secrets ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	for _, s := range secrets {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: s, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
	}
	return p
}
