package apiserverextra

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

const testFinalizer = "kube-lite.io/hold"

func TestDeletion(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	pods := s.Client.CoreV1().Pods("default")

	t.Run("finalizer holds a deletion until removed", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{testFinalizer}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		got, err := cms.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("object with a finalizer is gone after delete: %v", err)
		}
		if got.DeletionTimestamp == nil {
			t.Fatal("deletionTimestamp not set on a held object")
		}
		if _, err := cms.Patch(ctx, "held", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("remove finalizer: %v", err)
		}
		if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after the last finalizer is removed, get = %v, want NotFound", err)
		}
	})

	t.Run("bound pod is deleted gracefully, then at once with grace 0", func(t *testing.T) {
		if _, err := pods.Create(ctx, newPod("graceful"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(ctx, t, s, "graceful", "node-1")
		if err := pods.Delete(ctx, "graceful", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		got, err := pods.Get(ctx, "graceful", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("bound pod gone at once, want graceful deletion: %v", err)
		}
		if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
			t.Fatalf("deletionTimestamp=%v deletionGracePeriodSeconds=%v, want set and 30", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
		}
		if err := pods.Delete(ctx, "graceful", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatalf("delete with grace 0: %v", err)
		}
		if _, err := pods.Get(ctx, "graceful", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after grace 0, get = %v, want NotFound", err)
		}
	})

	t.Run("unbound pod is deleted at once", func(t *testing.T) {
		if _, err := pods.Create(ctx, newPod("unbound"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "unbound", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get = %v, want NotFound", err)
		}
	})

	for _, tc := range []struct {
		policy metav1.DeletionPropagation
		want   string
	}{
		{metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
		{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
	} {
		t.Run("propagationPolicy "+string(tc.policy)+" adds "+tc.want, func(t *testing.T) {
			name := strings.ToLower("prop-" + string(tc.policy))
			if _, err := s.Client.AppsV1().Deployments("default").Create(ctx, newDeployment(name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Client.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &tc.policy}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			got, err := s.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("object gone, want it held by %s: %v", tc.want, err)
			}
			if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, tc.want) {
				t.Fatalf("deletionTimestamp=%v finalizers=%v, want set and %s", got.DeletionTimestamp, got.Finalizers, tc.want)
			}
			if got.Generation != 2 {
				t.Errorf("generation = %d after the deletion was marked, want 2 (bumped once, as upstream)", got.Generation)
			}
			// A second delete changes nothing the controller acts on.
			if err := s.Client.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &tc.policy}); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			again, err := s.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if again.Generation != 2 {
				t.Errorf("generation %d after a second delete, want 2", again.Generation)
			}
		})
	}

	t.Run("precondition on another UID is a conflict", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "precond"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := cms.Delete(ctx, "precond", metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions("not-the-uid")})
		if !apierrors.IsConflict(err) || !strings.HasPrefix(err.Error(),
			`Operation cannot be fulfilled on ConfigMap "precond": the UID in the precondition (not-the-uid) does not match the UID in record (`) {
			t.Fatalf("delete with wrong UID = %v, want upstream's 409 Conflict", err)
		}
		stale := "1"
		err = cms.Delete(ctx, "precond", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(),
			"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (") {
			t.Fatalf("delete with a stale resourceVersion = %v, want upstream's 409 Conflict", err)
		}
		if _, err := cms.Get(ctx, "precond", metav1.GetOptions{}); err != nil {
			t.Fatalf("object deleted despite failed precondition: %v", err)
		}
	})

	t.Run("a DELETE answers as upstream's: a Status for most kinds, the object for pods", func(t *testing.T) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "answered"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.Client.CoreV1().RESTClient().Delete().Namespace("default").Resource("configmaps").Name("answered").Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" || st.Status != metav1.StatusSuccess || st.Details == nil ||
			st.Details.Name != "answered" || st.Details.Kind != "configmaps" || st.Details.UID != cm.UID {
			t.Errorf("configmap DELETE answered %s, want a Success Status naming configmaps/answered and its uid", raw)
		}
		if _, err := pods.Create(ctx, newPod("answered"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		raw, err = s.Client.CoreV1().RESTClient().Delete().Namespace("default").Resource("pods").Name("answered").Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if err := json.Unmarshal(raw, &pod); err != nil || pod.Kind != "Pod" || pod.Name != "answered" {
			t.Errorf("pod DELETE answered %s, want the pod", raw)
		}
		for _, name := range []string{"in-1", "in-2", "out"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"sel": name[:2]}}}
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		raw, err = s.Client.CoreV1().RESTClient().Delete().Namespace("default").Resource("configmaps").Param("labelSelector", "sel=in").Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		var list corev1.ConfigMapList
		if err := json.Unmarshal(raw, &list); err != nil || list.Kind != "ConfigMapList" || len(list.Items) != 2 {
			t.Errorf("deletecollection answered %s, want the ConfigMapList of the two deleted", raw)
		}
	})

	t.Run("a body's DeleteOptions win over the query", func(t *testing.T) {
		raw := newRaw(t, s)
		for _, name := range []string{"body-wins-dry", "body-wins-policy"} {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Upstream reads the query only when there is no body: the dry run
		// and the bad policy below are not looked at.
		body := []byte(`{"kind":"DeleteOptions","apiVersion":"v1"}`)
		for _, q := range []string{"body-wins-dry?dryRun=All", "body-wins-policy?propagationPolicy=Sometimes"} {
			if r := raw.do(t, "DELETE", "/api/v1/namespaces/default/configmaps/"+q, "application/json", body); r.code != 200 {
				t.Fatalf("DELETE %s with a body = %d %s, want 200", q, r.code, r.body)
			}
			name, _, _ := strings.Cut(q, "?")
			if _, err := cms.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after DELETE %s with a body, get = %v, want NotFound", q, err)
			}
		}
	})

	t.Run("dryRun=All delete keeps the object", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry-delete"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "dry-delete", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Get(ctx, "dry-delete", metav1.GetOptions{}); err != nil {
			t.Fatalf("dry-run delete removed the object: %v", err)
		}
	})
}

func bind(ctx context.Context, t *testing.T, s *framework.Server, pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := s.Client.CoreV1().Pods("default").Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to %s: %v", pod, node, err)
	}
}

// TestEviction: an eviction of a pod no PodDisruptionBudget covers is
// allowed, as upstream's (test/integration/disruption has the budgets);
// client-go's EvictV1 and the discovery entry kubectl drain looks for both
// work.
func TestEviction(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	pods := s.Client.CoreV1().Pods("default")

	rl, err := s.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range rl.APIResources {
		if r.Name == "pods/eviction" {
			found = r.Group == "policy" && r.Version == "v1" && r.Kind == "Eviction"
		}
	}
	if !found {
		t.Errorf("discovery has no pods/eviction of policy/v1 Eviction (kubectl drain looks for it)")
	}

	if _, err := pods.Create(ctx, newPod("evicted"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(ctx, t, s, "evicted", "node-1")
	ev := func(name string, opts *metav1.DeleteOptions) error {
		return pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, DeleteOptions: opts})
	}
	if err := ev("missing", nil); !apierrors.IsNotFound(err) || err.Error() != `pods "missing" not found` {
		t.Errorf("evicting a missing pod: %v, want 404 pods \"missing\" not found", err)
	}
	if err := ev("evicted", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run eviction: %v", err)
	}
	dryRun, err := pods.Get(ctx, "evicted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dryRun.DeletionTimestamp != nil || len(dryRun.Status.Conditions) != 1 {
		t.Fatalf("after a dry-run eviction: deletionTimestamp %v, conditions %v, want untouched", dryRun.DeletionTimestamp, dryRun.Status.Conditions)
	}
	if err := ev("evicted", &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](7)}); err != nil {
		t.Fatalf("eviction: %v", err)
	}
	p, err := pods.Get(ctx, "evicted", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a bound pod is gone at once after eviction, want graceful deletion: %v", err)
	}
	if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 7 {
		t.Errorf("deletionTimestamp %v, grace %v, want set and the eviction's 7", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}
	var cond *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			cond = &p.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "EvictionByEvictionAPI" || cond.Message != "Eviction API: evicting" {
		t.Errorf("DisruptionTarget condition = %+v, want True EvictionByEvictionAPI 'Eviction API: evicting'", cond)
	}

	raw := newRaw(t, s)
	resp := raw.do(t, http.MethodPost, "/api/v1/namespaces/default/pods/evicted/eviction", "application/json",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}`))
	if st := resp.status(t); st.Code != http.StatusBadRequest || st.Message != "name in URL does not match name in Eviction object" {
		t.Errorf("eviction naming another pod: %d %q, want upstream's 400", st.Code, st.Message)
	}
	resp = raw.do(t, http.MethodPost, "/api/v1/namespaces/default/pods/evicted/eviction", "application/json",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction"}`))
	if st := resp.status(t); st.Code != http.StatusBadRequest || st.Message != "name in URL does not match name in Eviction object" {
		t.Errorf("eviction naming no pod: %d %q, want upstream's 400", st.Code, st.Message)
	}
	resp = raw.do(t, http.MethodPost, "/api/v1/namespaces/default/pods/evicted/eviction", "application/json",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"evicted"},"deleteOptions":{"ignoreStoreReadErrorWithClusterBreakingPotential":true}}`))
	if st := resp.status(t); st.Code != http.StatusUnprocessableEntity ||
		st.Message != `Eviction.policy "evicted" is invalid: deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction, try after removing the option` {
		t.Errorf("eviction ignoring store read errors: %d %q, want upstream's 422", st.Code, st.Message)
	}
}
