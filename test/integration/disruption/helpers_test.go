// Package disruption tests PodDisruptionBudgets end to end through a real
// apiserver: the eviction subresource spending a budget, and the disruption
// controller keeping the budget's status.
package disruption

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

const ns = "default"

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runningPod creates a pod bound to a node and reports it Running, ready
// or not, as a kubelet would.
func runningPod(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, ready bool, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "kube-lite.local/busybox:1.35"}},
			TerminationGracePeriodSeconds: ptr.To[int64](30)},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if p, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func createBudget(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, spec policyv1.PodDisruptionBudgetSpec) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pdb
}

func evict(ctx context.Context, c kubernetes.Interface, name string, opts *metav1.DeleteOptions) error {
	return c.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: opts})
}

// evictRaw posts an eviction over plain HTTP and returns the answer's
// Retry-After header and Status as sent: client-go would retry a 429
// carrying Retry-After by itself, ten times, before its caller saw it.
func evictRaw(ctx context.Context, t *testing.T, cfg *rest.Config, name string) (string, metav1.Status) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q}}`, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Host+"/api/v1/namespaces/"+ns+"/pods/"+name+"/eviction", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("eviction of %s: %d with a body that is no Status: %v", name, resp.StatusCode, err)
	}
	if int(st.Code) != resp.StatusCode {
		t.Fatalf("eviction of %s: HTTP %d, Status code %d", name, resp.StatusCode, st.Code)
	}
	return resp.Header.Get("Retry-After"), st
}

// wantRefused checks a 429 of a budget, with the cause a user reads.
func wantRefused(t *testing.T, err error, cause string) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusTooManyRequests ||
		se.ErrStatus.Message != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Fatalf("eviction: %v, want 429 Cannot evict pod as it would violate the pod's disruption budget.", err)
	}
	if d := se.ErrStatus.Details; d == nil || len(d.Causes) != 1 || d.Causes[0].Type != policyv1.DisruptionBudgetCause || d.Causes[0].Message != cause {
		t.Fatalf("429 details %+v, want the DisruptionBudget cause %q", se.ErrStatus.Details, cause)
	}
}

func going(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) bool {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.DeletionTimestamp != nil
}
