package status

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func statusPatches(c *fake.Clientset) []clienttesting.PatchActionImpl {
	var out []clienttesting.PatchActionImpl
	for _, a := range c.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok && p.Subresource == "status" {
			out = append(out, p)
		}
	}
	return out
}

func TestPatchesOnlyWhenTheStatusChanged(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	client := fake.NewSimpleClientset(pod)
	m := NewManager(client)
	ctx := context.Background()

	steps := []struct {
		phase       v1.PodPhase
		wantPatches int
	}{
		{v1.PodPending, 1},
		{v1.PodPending, 1}, // unchanged: no new patch
		{v1.PodRunning, 2},
		{v1.PodRunning, 2},
	}
	for i, s := range steps {
		m.SetPodStatus(pod, v1.PodStatus{Phase: s.phase})
		m.SyncOnce(ctx)
		patches := statusPatches(client)
		if len(patches) != s.wantPatches {
			t.Fatalf("step %d: %d status patches, want %d", i, len(patches), s.wantPatches)
		}
	}
	last := statusPatches(client)[1]
	var body struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
		Status v1.PodStatus `json:"status"`
	}
	if err := json.Unmarshal(last.Patch, &body); err != nil {
		t.Fatal(err)
	}
	if body.Metadata.UID != "u1" || body.Status.Phase != v1.PodRunning {
		t.Fatalf("patch = %s", last.Patch)
	}
	got, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1.PodRunning {
		t.Fatalf("pod status after patch: %v %v", got.Status.Phase, err)
	}
}

func TestGonePodIsNotRetried(t *testing.T) {
	client := fake.NewSimpleClientset()
	m := NewManager(client)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", UID: "u2"}}
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning})
	m.SyncOnce(context.Background())
	m.SyncOnce(context.Background())
	if n := len(statusPatches(client)); n != 1 {
		t.Fatalf("%d patches for a pod that is gone, want 1 attempt", n)
	}
}

func TestSendPatchesAtOnceAndOnlyOnce(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	client := fake.NewSimpleClientset(pod)
	m := NewManager(client)
	ctx := context.Background()
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodFailed})
	if err := m.Send(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if n := len(statusPatches(client)); n != 1 {
		t.Fatalf("patches after Send = %d, want 1", n)
	}
	got, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1.PodFailed {
		t.Fatalf("API phase = %v (%v), want Failed", got.Status.Phase, err)
	}
	// Already sent: neither Send nor the loop sends it again.
	if err := m.Send(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	m.SyncOnce(ctx)
	if n := len(statusPatches(client)); n != 1 {
		t.Fatalf("patches = %d, want 1", n)
	}
	// A pod that is gone is no error.
	gone := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", UID: "u2"}}
	m.SetPodStatus(gone, v1.PodStatus{Phase: v1.PodFailed})
	if err := m.Send(ctx, gone.UID); err != nil {
		t.Fatalf("Send for a deleted pod: %v", err)
	}
}
