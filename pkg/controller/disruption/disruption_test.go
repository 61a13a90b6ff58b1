package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type recorder struct{ events []string }

func (r *recorder) Eventf(_ runtime.Object, eventType, reason, format string, args ...any) {
	r.events = append(r.events, eventType+" "+reason+" "+fmt.Sprintf(format, args...))
}

func readyPod(name string, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: append([]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, conds...)},
	}
}

// newController builds a controller over objs, with them in its caches.
// Deployments, ReplicaSets and Jobs are what the apiserver serves, the
// first two with a scale subresource; scales answers for objs among them.
func newController(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset, *recorder) {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods(), f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(),
		fakeScales(client, objs), nil, clocktesting.NewFakeClock(now))
	rec := &recorder{}
	c.Events = rec
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *policyv1.PodDisruptionBudget:
			err = f.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = f.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *appsv1.Deployment:
			err = f.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, client, rec
}

var (
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
	replicaSetsGVR = appsv1.SchemeGroupVersion.WithResource("replicasets")
	jobsGVR        = batchv1.SchemeGroupVersion.WithResource("jobs")
)

// fakeScales serves discovery and the scale subresource as kube-lite's
// apiserver does: Deployments and ReplicaSets have one, Jobs do not, and
// either way a missing object is not found.
func fakeScales(client *fake.Clientset, objs []runtime.Object) Scales {
	client.Resources = []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Kind: "Deployment"},
			{Name: "deployments/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale"},
			{Name: "replicasets", Namespaced: true, Kind: "ReplicaSet"},
			{Name: "replicasets/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale"},
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			{Name: "jobs", Namespaced: true, Kind: "Job"},
			{Name: "jobs/status", Namespaced: true, Kind: "Job"},
		}},
	}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), apimeta.RESTScopeNamespace)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), apimeta.RESTScopeNamespace)
	mapper.Add(batchv1.SchemeGroupVersion.WithKind("Job"), apimeta.RESTScopeNamespace)

	scales := map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{}
	add := func(gvr schema.GroupVersionResource, m metav1.Object, replicas *int32) {
		if scales[gvr] == nil {
			scales[gvr] = map[string]*unstructured.Unstructured{}
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"spec": map[string]any{"replicas": int64(ptr.Deref(replicas, 1))}}}
		u.SetName(m.GetName())
		u.SetNamespace(m.GetNamespace())
		u.SetUID(m.GetUID())
		scales[gvr][m.GetNamespace()+"/"+m.GetName()] = u
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			add(deploymentsGVR, o, o.Spec.Replicas)
		case *appsv1.ReplicaSet:
			add(replicaSetsGVR, o, o.Spec.Replicas)
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		if g.GetSubresource() != "scale" {
			return false, nil, nil
		}
		if u, ok := scales[g.GetResource()][g.GetNamespace()+"/"+g.GetName()]; ok {
			return true, u.DeepCopy(), nil
		}
		return true, nil, apierrors.NewNotFound(g.GetResource().GroupResource(), g.GetName())
	})
	return Scales{Mapper: mapper, Client: dyn, Discovery: client.Discovery()}
}

func ownedPod(name string, owner metav1.Object, apiVersion, kind string) *corev1.Pod {
	p := readyPod(name)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	return p
}

// TestPercentageOfAnyScalableController: a percentage is taken of the
// scale of the pods' controller whatever its kind, read from its scale
// subresource when the controller keeps no cache of that kind, as
// upstream's does; a controller kind without one fails the sync with
// upstream's message, and so does one the apiserver does not serve.
func TestPercentageOfAnyScalableController(t *testing.T) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5)}}
	// A ReplicaSet whose Deployment is gone counts with its own scale.
	orphanRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "default", UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: "gone-uid", Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}
	job := &metav1.ObjectMeta{Name: "batch", Namespace: "default", UID: "job-uid"}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		objs    []runtime.Object
		status  policyv1.PodDisruptionBudgetStatus
		failure string
	}{
		{name: "pods a Deployment controls itself", pod: ownedPod("p", deploy, "apps/v1", "Deployment"), objs: []runtime.Object{deploy},
			status: policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, DesiredHealthy: 3, CurrentHealthy: 1}},
		{name: "pods of a ReplicaSet whose Deployment is gone", pod: ownedPod("p", orphanRS, "apps/v1", "ReplicaSet"), objs: []runtime.Object{orphanRS},
			status: policyv1.PodDisruptionBudgetStatus{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 1}},
		{name: "Job pods", pod: ownedPod("p", job, "batch/v1", "Job"),
			failure: "jobs.batch does not implement the scale subresource"},
		{name: "pods of a Deployment that is gone", pod: ownedPod("p", deploy, "apps/v1", "Deployment"),
			failure: `found no controllers for pod "p"`},
		{name: "pods of a kind not served", pod: ownedPod("p", job, "apps/v1", "StatefulSet"),
			failure: `no matches for kind "StatefulSet" in version "apps/v1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
				Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			}
			c, client, _ := newController(t, append([]runtime.Object{pdb, tc.pod}, tc.objs...)...)
			if err := c.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			got, err := client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
			if tc.failure != "" {
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != policyv1.SyncFailedReason || cond.Message != tc.failure || got.Status.DisruptionsAllowed != 0 {
					t.Errorf("status %+v, want DisruptionAllowed False %s %q", got.Status, policyv1.SyncFailedReason, tc.failure)
				}
				return
			}
			s := got.Status
			if s.ExpectedPods != tc.status.ExpectedPods || s.DesiredHealthy != tc.status.DesiredHealthy || s.CurrentHealthy != tc.status.CurrentHealthy ||
				cond == nil || cond.Reason != policyv1.InsufficientPodsReason {
				t.Errorf("status %+v, want expected %d desired %d healthy %d, %s", s, tc.status.ExpectedPods, tc.status.DesiredHealthy, tc.status.CurrentHealthy, policyv1.InsufficientPodsReason)
			}
		})
	}
}

// TestEvictedPodThatStaysIsCountedAgain: a pod an eviction was allowed for
// stays out of the healthy count for DeletionTimeout; if it has not started
// going by then it counts again, with a NotDeleted event, as upstream's.
func TestEvictedPodThatStaysIsCountedAgain(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: map[string]metav1.Time{
			"old":    metav1.NewTime(now.Add(-DeletionTimeout - time.Second)),
			"recent": metav1.NewTime(now.Add(-time.Minute)),
		}},
	}
	c, client, rec := newController(t, pdb, readyPod("old"), readyPod("recent"), readyPod("other"))
	if err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	got, err := client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Status
	if _, ok := s.DisruptedPods["recent"]; !ok || len(s.DisruptedPods) != 1 || s.CurrentHealthy != 2 || s.DesiredHealthy != 1 || s.ExpectedPods != 3 || s.DisruptionsAllowed != 1 {
		t.Errorf("status %+v, want only recent still disrupted, 2 healthy of 3, 1 desired, 1 allowed", s)
	}
	want := "Warning NotDeleted Pod was expected by PDB default/web to be deleted but it wasn't"
	if len(rec.events) != 1 || rec.events[0] != want {
		t.Errorf("events %q, want [%q]", rec.events, want)
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("queue holds %d keys at once, want the recheck only after recent's timeout", n)
	}
}

// TestStaleDisruptionTargetIsCleared: an eviction's DisruptionTarget on a
// pod that was never deleted goes back to False after
// StaleDisruptionTimeout; the kubelet's own condition stays.
func TestStaleDisruptionTargetIsCleared(t *testing.T) {
	cond := func(reason string, ago time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	stale := readyPod("stale", cond("EvictionByEvictionAPI", StaleDisruptionTimeout+time.Second))
	fresh := readyPod("fresh", cond("EvictionByEvictionAPI", time.Minute))
	kubelet := readyPod("kubelet", cond(corev1.PodReasonTerminationByKubelet, time.Hour))
	c, client, _ := newController(t, stale, fresh, kubelet)
	for _, name := range []string{"stale", "fresh", "kubelet"} {
		if err := c.syncStale(context.Background(), "default/"+name); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]corev1.ConditionStatus{"stale": corev1.ConditionFalse, "fresh": corev1.ConditionTrue, "kubelet": corev1.ConditionTrue} {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status != want {
				t.Errorf("pod %s: DisruptionTarget %s, want %s", name, c.Status, want)
			}
		}
	}
}
