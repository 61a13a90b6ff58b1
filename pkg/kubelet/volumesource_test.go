package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/serviceaccount"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// A pod with the automatic token volume waits, with a FailedMount event,
// until kube-root-ca.crt exists; then its containers find a token bound to
// the pod, the CA and the namespace. The token file is rewritten with a new
// token once 80 % of the token's shown life (the hour asked for) has passed,
// and not before.
func TestTokenVolumeIsRefreshedBeforeItsTokenExpires(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, func(d *Deps) {
		d.Volumes = &volume.Manager{Root: root, Source: NewAPISource(d.Client, d.Clock)}
	})
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	var requests []*authenticationv1.TokenRequest
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, tr.DeepCopy())
		tr.Status.Token = fmt.Sprintf("token-%d", len(requests))
		tr.Status.ExpirationTimestamp = metav1.NewTime(h.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	const volName = "kube-api-access-abcde"
	pod := testPod("tokens", func(p *v1.Pod) {
		p.Spec.ServiceAccountName = "robot"
		p.Spec.Volumes = []v1.Volume{{Name: volName, VolumeSource: v1.VolumeSource{Projected: serviceaccount.TokenVolumeSource()}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: volName, ReadOnly: true, MountPath: serviceaccount.TokenMountPath}}
	})
	h.add(pod)
	h.sync(pod)
	if h.running(pod, "main") != nil {
		t.Fatal("started without kube-root-ca.crt")
	}
	const want = `Warning FailedMount MountVolume.SetUp failed for volume "kube-api-access-abcde" : configmap "kube-root-ca.crt" not found`
	if events := drainEvents(rec); !slices.Contains(events, want) {
		t.Fatalf("events %q, want %q", events, want)
	}

	if _, err := h.client.CoreV1().ConfigMaps("default").Create(t.Context(), &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"},
		Data:       map[string]string{"ca.crt": "CA PEM"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(pod)
	c := h.running(pod, "main")
	if c == nil {
		t.Fatalf("not running: %+v", h.status(pod).ContainerStatuses)
	}
	var dir string
	for _, m := range h.rt.Config(c.Id).Mounts {
		if m.ContainerPath == serviceaccount.TokenMountPath {
			dir = m.HostPath
			if !m.Readonly {
				t.Error("token volume mounted read-write")
			}
		}
	}
	if dir == "" {
		t.Fatalf("no mount at %s", serviceaccount.TokenMountPath)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("token") != "token-1" || read("ca.crt") != "CA PEM" || read("namespace") != "default" {
		t.Fatalf("files: token %q ca.crt %q namespace %q", read("token"), read("ca.crt"), read("namespace"))
	}
	ref := requests[0].Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != pod.Name || ref.UID != pod.UID || len(requests[0].Spec.Audiences) != 0 || *requests[0].Spec.ExpirationSeconds != 3607 {
		t.Fatalf("token request %+v, want 3607 s for the API, bound to the pod", requests[0].Spec)
	}

	// 80 % of 3607 s is 2885.6 s.
	h.clock.Step(2885 * time.Second)
	h.sync(pod)
	if got := read("token"); got != "token-1" || len(requests) != 1 {
		t.Fatalf("token %q after %d requests, before 80 %% of its life", got, len(requests))
	}
	h.clock.Step(time.Second)
	h.sync(pod)
	if got := read("token"); got != "token-2" {
		t.Fatalf("token %q once 80 %% of its life had passed", got)
	}
	if h.running(pod, "main") == nil || len(h.containers(pod)) != 1 {
		t.Fatal("the refresh restarted the container")
	}
}

// A long-lived token is used for a day at most.
func TestLongLivedTokenIsRefreshedAfterADay(t *testing.T) {
	h := newHarness(t)
	src := NewAPISource(h.client, h.clock)
	n := 0
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		n++
		tr.Status.Token = fmt.Sprint(n)
		tr.Status.ExpirationTimestamp = metav1.NewTime(h.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	pod := testPod("long")
	get := func() string {
		t.Helper()
		tok, err := src.Token(t.Context(), pod, "vault", 7*24*3600)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := get()
	h.clock.Step(24*time.Hour - time.Second)
	if get() != first {
		t.Fatal("refreshed before a day")
	}
	h.clock.Step(time.Second)
	if get() == first {
		t.Fatal("not refreshed after a day")
	}
	// A gone pod's tokens are dropped with its volumes.
	second := get()
	if err := (&volume.Manager{Root: t.TempDir(), Source: src}).TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if get() == second {
		t.Fatal("token kept after the pod's volumes were torn down")
	}
}
