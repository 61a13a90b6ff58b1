package namespace

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

type discoverer []*metav1.APIResourceList

func (d discoverer) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return d, nil
}

var resources = discoverer{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"list", "delete", "get"}},
		{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "update"}},
		{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
	}},
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"list", "delete"}},
	}},
}

func object(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestDeletesContentThenFinalizes(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed", UID: "ns-uid", DeletionTimestamp: &metav1.Time{}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
	}
	client := controllertest.NewClientset(ns)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "pods"}:                       "PodList",
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
	},
		object("v1", "Pod", "doomed", "a"), object("v1", "Pod", "doomed", "b"),
		object("apps/v1", "Deployment", "doomed", "web"), object("v1", "Pod", "other", "keep"))
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, dyn, resources, f.Core().V1().Namespaces(), nil)
	_ = f.Core().V1().Namespaces().Informer().GetIndexer().Add(ns)

	if err := c.sync(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	left, _ := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("doomed").List(ctx, metav1.ListOptions{})
	if len(left.Items) != 0 {
		t.Fatalf("%d pods left in the namespace", len(left.Items))
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("other").Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod in another namespace: %v", err)
	}
	// Everything went at once (no grace periods here): no need to wait
	// for another pass.
	if n := countFinalize(client.Actions()); n != 1 {
		t.Fatalf("%d finalize calls once empty, want 1", n)
	}
}

// TestConditionsSayWhatIsLeft: while content remains, the namespace's
// status conditions say what and why, with upstream's reasons and messages.
func TestConditionsSayWhatIsLeft(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed", UID: "ns-uid", DeletionTimestamp: &metav1.Time{}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	client := controllertest.NewClientset(ns)
	held := object("v1", "Pod", "doomed", "held")
	held.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	held.SetFinalizers([]string{"example.com/hold"})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "pods"}:                       "PodList",
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
	}, held, object("apps/v1", "Deployment", "doomed", "web"))
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, dyn, resources, f.Core().V1().Namespaces(), nil)
	_ = f.Core().V1().Namespaces().Informer().GetIndexer().Add(ns)

	if err := c.sync(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if n := countFinalize(client.Actions()); n != 0 {
		t.Fatalf("finalized while content remained")
	}
	got, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got.Status.Conditions {
		lines = append(lines, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	want := []string{
		"NamespaceDeletionDiscoveryFailure=False ResourcesDiscovered: All resources successfully discovered",
		"NamespaceDeletionGroupVersionParsingFailure=False ParsedGroupVersions: All legacy kube types successfully parsed",
		"NamespaceDeletionContentFailure=False ContentDeleted: All content successfully deleted, may be waiting on finalization",
		"NamespaceContentRemaining=True SomeResourcesRemain: Some resources are remaining: pods. has 1 resource instances",
		"NamespaceFinalizersRemaining=True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("conditions:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestLeavesLiveNamespacesAlone(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	client := controllertest.NewClientset(ns)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "pods"}: "PodList", {Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
	}, object("v1", "Pod", "live", "a"))
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, dyn, resources, f.Core().V1().Namespaces(), nil)
	_ = f.Core().V1().Namespaces().Informer().GetIndexer().Add(ns)
	if err := c.sync(context.Background(), "live"); err != nil {
		t.Fatal(err)
	}
	if len(dyn.Actions()) != 0 || len(controllertest.Writes(client)) != 0 {
		t.Fatalf("touched a live namespace: %v %v", dyn.Actions(), controllertest.Writes(client))
	}
}

func countFinalize(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetSubresource() == "finalize" {
			n++
		}
	}
	return n
}
