package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

func pod(name, node string, mutate func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func withSecretVolume(s string) func(*corev1.PodSpec) {
	return func(ps *corev1.PodSpec) {
		ps.Volumes = append(ps.Volumes, corev1.Volume{Name: s, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
	}
}

func TestPodRefs(t *testing.T) {
	p := pod("p", "n1", func(ps *corev1.PodSpec) {
		ps.ServiceAccountName = "bot"
		ps.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		ps.Volumes = []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
			}}}},
		}
		ps.InitContainers = []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}}}}}
		ps.Containers = []corev1.Container{{Name: "c", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-secret"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
			{Name: "C", Value: "plain"},
		}}}
	})
	got := map[Ref]bool{}
	for _, r := range PodRefs(p) {
		if got[r] {
			t.Errorf("duplicate %v", r)
		}
		got[r] = true
	}
	want := []Ref{
		{"serviceaccounts", "ns", "bot"}, {"secrets", "ns", "pull"}, {"secrets", "ns", "vol-secret"}, {"configmaps", "ns", "vol-cm"},
		{"persistentvolumeclaims", "ns", "claim"}, {"secrets", "ns", "proj-secret"}, {"configmaps", "ns", "proj-cm"},
		{"secrets", "ns", "init-env"}, {"configmaps", "ns", "env-cm"},
	}
	for _, r := range want {
		if !got[r] {
			t.Errorf("missing %v", r)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d refs, want %d: %v", len(got), len(want), got)
	}
}

func TestGraphFollowsPods(t *testing.T) {
	g := NewGraph()
	shared := Ref{"secrets", "ns", "shared"}
	g.Replace([]runtime.Object{pod("a", "n1", withSecretVolume("shared")), pod("b", "n1", withSecretVolume("shared")), pod("pending", "", withSecretVolume("early"))})
	steps := []struct {
		name      string
		do        func()
		podOnN1   map[string]bool
		n1Uses    map[Ref]bool
		n2UsesAny bool
	}{
		{"initial", func() {},
			map[string]bool{"a": true, "b": true, "pending": false},
			map[Ref]bool{shared: true, {"secrets", "ns", "early"}: false, {"serviceaccounts", "ns", "default"}: true}, false},
		{"one user of the secret goes: the other keeps it", func() { g.Delete(pod("a", "n1", nil)) },
			map[string]bool{"a": false, "b": true},
			map[Ref]bool{shared: true}, false},
		{"the pending pod is bound to n1", func() { g.Upsert(pod("pending", "n1", withSecretVolume("early"))) },
			map[string]bool{"pending": true},
			map[Ref]bool{{"secrets", "ns", "early"}: true}, false},
		{"b moves to n2 (recreated elsewhere)", func() { g.Upsert(pod("b", "n2", withSecretVolume("shared"))) },
			map[string]bool{"b": false},
			map[Ref]bool{shared: false}, true},
		{"relist drops everything not listed", func() { g.Replace(nil) },
			map[string]bool{"pending": false},
			map[Ref]bool{{"secrets", "ns", "early"}: false, {"serviceaccounts", "ns", "default"}: false}, false},
	}
	for _, s := range steps {
		s.do()
		for name, want := range s.podOnN1 {
			if got := g.PodOnNode("n1", "ns", name); got != want {
				t.Errorf("%s: PodOnNode(n1, %s) = %v, want %v", s.name, name, got, want)
			}
		}
		for ref, want := range s.n1Uses {
			if got := g.NodeUses("n1", ref); got != want {
				t.Errorf("%s: NodeUses(n1, %v) = %v, want %v", s.name, ref, got, want)
			}
		}
		if got := g.NodeUses("n2", shared); got != s.n2UsesAny {
			t.Errorf("%s: NodeUses(n2, shared) = %v, want %v", s.name, got, s.n2UsesAny)
		}
	}
}

func TestAuthorize(t *testing.T) {
	g := NewGraph()
	g.Replace([]runtime.Object{pod("mine", "n1", withSecretVolume("s1")), pod("theirs", "n2", withSecretVolume("s2"))})
	z := New(g, nil)
	n1 := &request.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	a := func(verb, group, resource, sub, ns, name string) authz.Attributes {
		return authz.Attributes{User: n1, ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	cases := []struct {
		a    authz.Attributes
		want authz.Decision
	}{
		{a("get", "", "pods", "", "ns", "mine"), authz.Allow},
		{a("get", "", "pods", "", "ns", "theirs"), authz.NoOpinion},
		{a("list", "", "pods", "", "", ""), authz.Allow},
		{a("watch", "", "pods", "", "", ""), authz.Allow},
		{a("patch", "", "pods", "status", "ns", "mine"), authz.Allow},
		// As upstream, NodeRestriction admission limits writes to its own pods.
		{a("update", "", "pods", "status", "ns", "theirs"), authz.Allow},
		{a("get", "", "pods", "status", "ns", "theirs"), authz.NoOpinion},
		{a("patch", "", "pods", "", "ns", "mine"), authz.NoOpinion},
		{a("delete", "", "pods", "", "ns", "mine"), authz.Allow},
		{a("delete", "", "pods", "", "ns", "theirs"), authz.Allow},
		{a("create", "", "pods", "", "ns", ""), authz.Allow},
		{a("create", "", "pods", "eviction", "ns", "theirs"), authz.Allow},
		{a("update", "", "pods", "eviction", "ns", "mine"), authz.NoOpinion},
		{a("create", "", "pods", "binding", "ns", "mine"), authz.NoOpinion},
		{a("get", "", "secrets", "", "ns", "s1"), authz.Allow},
		{a("get", "", "secrets", "", "ns", "s2"), authz.NoOpinion},
		{a("list", "", "secrets", "", "ns", ""), authz.NoOpinion},
		{a("get", "", "serviceaccounts", "", "ns", "default"), authz.Allow},
		{a("create", "", "serviceaccounts", "token", "ns", "default"), authz.Allow},
		{a("create", "", "serviceaccounts", "token", "other", "default"), authz.NoOpinion},
		{a("get", "", "configmaps", "", "ns", "s1"), authz.NoOpinion},
		{a("get", "", "nodes", "", "", "n2"), authz.Allow},
		{a("create", "", "nodes", "", "", ""), authz.Allow},
		{a("patch", "", "nodes", "status", "", "n1"), authz.Allow},
		{a("update", "", "nodes", "", "", "n1"), authz.Allow},
		{a("patch", "", "nodes", "status", "", "n2"), authz.NoOpinion},
		{a("delete", "", "nodes", "", "", "n1"), authz.Allow},
		{a("delete", "", "nodes", "", "", "n2"), authz.NoOpinion},
		{a("watch", "", "secrets", "", "ns", "s1"), authz.Allow},
		{a("watch", "", "secrets", "", "ns", "s2"), authz.NoOpinion},
		{a("watch", "", "pods", "", "ns", "theirs"), authz.NoOpinion},
		{a("list", "", "services", "", "", ""), authz.Allow},
		{a("create", "", "services", "", "ns", ""), authz.NoOpinion},
		{a("get", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"), authz.Allow},
		{a("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n2"), authz.NoOpinion},
		{a("create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), authz.Allow},
		{a("get", "coordination.k8s.io", "leases", "", "default", "n1"), authz.NoOpinion},
		{a("create", "", "events", "", "ns", ""), authz.Allow},
		{a("patch", "events.k8s.io", "events", "", "ns", "e"), authz.Allow},
		{a("delete", "", "events", "", "ns", "e"), authz.NoOpinion},
		{a("get", "apps", "deployments", "", "ns", "d"), authz.NoOpinion},
	}
	for _, tc := range cases {
		if d, _, _ := z.Authorize(context.Background(), tc.a); d != tc.want {
			t.Errorf("%s %s/%s %s/%s: %s, want %s", tc.a.Verb, tc.a.Resource, tc.a.Subresource, tc.a.Namespace, tc.a.Name, d, tc.want)
		}
	}

	// Only kubelet identities are the Node authorizer's business.
	for _, u := range []*request.User{
		{Name: "system:node:n1"},                                 // not in system:nodes
		{Name: "n1", Groups: []string{"system:nodes"}},           // no node prefix
		{Name: "system:node:", Groups: []string{"system:nodes"}}, // empty node name
	} {
		at := a("get", "", "nodes", "", "", "n1")
		at.User = u
		if d, _, _ := z.Authorize(context.Background(), at); d != authz.NoOpinion {
			t.Errorf("user %+v: %s, want NoOpinion", u, d)
		}
	}
}

// storedPods is a PodReader over a fixed set of pods.
type storedPods []*corev1.Pod

func (s storedPods) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	for _, p := range s {
		if p.Namespace == ns && p.Name == name {
			return p, nil
		}
	}
	return nil, nil
}

func (s storedPods) ListPods(_ context.Context, ns string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range s {
		if p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestStorageConfirmsWhatTheGraphHasNotSeen: a pod bound a moment ago is
// in storage before the graph's watch delivers it.
func TestStorageConfirmsWhatTheGraphHasNotSeen(t *testing.T) {
	z := New(NewGraph(), storedPods{pod("fresh", "n1", withSecretVolume("s3")), pod("other", "n2", withSecretVolume("s4"))})
	n1 := &request.User{Name: "system:node:n1", Groups: []string{"system:nodes"}}
	cases := []struct {
		verb, resource, sub, name string
		want                      authz.Decision
	}{
		{"patch", "pods", "status", "fresh", authz.Allow},
		{"get", "pods", "", "fresh", authz.Allow},
		{"get", "secrets", "", "s3", authz.Allow},
		{"get", "pods", "status", "other", authz.NoOpinion},
		{"get", "secrets", "", "s4", authz.NoOpinion},
		{"get", "pods", "", "missing", authz.Allow}, // answered 404 by the handler
		{"delete", "pods", "", "missing", authz.Allow},
	}
	for _, tc := range cases {
		a := authz.Attributes{User: n1, ResourceRequest: true, Verb: tc.verb, Resource: tc.resource, Subresource: tc.sub, Namespace: "ns", Name: tc.name}
		if d, _, err := z.Authorize(context.Background(), a); d != tc.want || err != nil {
			t.Errorf("%s %s/%s %s: %s %v, want %s", tc.verb, tc.resource, tc.sub, tc.name, d, err, tc.want)
		}
	}
}
