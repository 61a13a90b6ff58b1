package noderestriction

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

var (
	podsRes   = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Namespaced: true}
	nodesRes  = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "nodes"}
	leasesRes = &registry.Resource{GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, Name: "leases", Namespaced: true}
	n1        = &request.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
)

func podOn(node string, mirror bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
	if mirror {
		p.Annotations = map[string]string{mirrorAnnotation: "hash"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID("uid-" + node), Controller: ptr.To(true)}}
	}
	return p
}

// fakeNodes has n1 and n2, each with uid "uid-<name>".
type fakeNodes struct{}

func (fakeNodes) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if name != "n1" && name != "n2" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, nil
}

// fakePods has pod "on-<node>" bound to each of n1 and n2.
type fakePods struct{}

func (fakePods) GetPod(_ context.Context, _, name string) (*corev1.Pod, error) {
	node, ok := strings.CutPrefix(name, "on-")
	if !ok {
		return nil, nil
	}
	p := podOn(node, false)
	p.Name = name
	return p, nil
}

func evictionOf(name string) *policyv1.Eviction {
	return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

// mirrorWith is n1's mirror pod changed by change.
func mirrorWith(change func(p *corev1.Pod)) *corev1.Pod {
	p := podOn("n1", true)
	change(p)
	return p
}

func labelled(p *corev1.Pod, k, v string) *corev1.Pod {
	p.Labels = map[string]string{k: v}
	return p
}

func nodeWith(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		user     *request.User
		res      *registry.Resource
		op       admission.Operation
		sub      string
		ns, obj  string
		new, old runtime.Object
		wantErr  string
	}{
		{"no user (security off)", nil, nodesRes, admission.Update, "", "", "n2", nodeWith("n2", nil), nodeWith("n2", nil), ""},
		{"other users unaffected", &request.User{Name: "admin", Groups: []string{"system:masters"}}, nodesRes, admission.Update, "", "", "n2", nodeWith("n2", nil), nodeWith("n2", nil), ""},
		{"node name without nodes group is not a node", &request.User{Name: "system:node:n1"}, nodesRes, admission.Update, "", "", "n2", nodeWith("n2", nil), nodeWith("n2", nil), ""},
		{"own node status", n1, nodesRes, admission.Update, "status", "", "n1", nodeWith("n1", nil), nodeWith("n1", nil), ""},
		{"other node", n1, nodesRes, admission.Update, "status", "", "n2", nodeWith("n2", nil), nodeWith("n2", nil), `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{"kubelet labels", n1, nodesRes, admission.Create, "", "", "n1", nodeWith("n1", map[string]string{"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a", "node.kubernetes.io/exclude-from-external-load-balancers": "", "team": "x"}), nil, ""},
		{"reserved label on create", n1, nodesRes, admission.Create, "", "", "n1", nodeWith("n1", map[string]string{"node-role.kubernetes.io/control-plane": ""}), nil,
			`node "n1" is not allowed to set the following labels: node-role.kubernetes.io/control-plane`},
		{"restriction label on update", n1, nodesRes, admission.Update, "", "", "n1",
			nodeWith("n1", map[string]string{"node-restriction.kubernetes.io/secure": "yes"}), nodeWith("n1", nil),
			`node "n1" is not allowed to modify labels: node-restriction.kubernetes.io/secure`},
		{"unchanged reserved label kept", n1, nodesRes, admission.Update, "", "", "n1",
			nodeWith("n1", map[string]string{"example.k8s.io/x": "1", "a": "b"}), nodeWith("n1", map[string]string{"example.k8s.io/x": "1"}), ""},
		{"taints removed", n1, nodesRes, admission.Update, "", "", "n1", nodeWith("n1", nil), nodeWith("n1", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}),
			`node "n1" is not allowed to modify taints`},
		{"taints added", n1, nodesRes, admission.Update, "", "", "n1", nodeWith("n1", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}), nodeWith("n1", nil), ""},
		{"plain pod create", n1, podsRes, admission.Create, "", "ns", "p", podOn("n1", false), nil,
			`pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{"mirror pod for itself", n1, podsRes, admission.Create, "", "ns", "p", podOn("n1", true), nil, ""},
		{"mirror pod without owner", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) { p.OwnerReferences = nil }), nil,
			`node "n1" can only create pods with an owner reference set to itself`},
		{"mirror pod with two owners", n1, podsRes, admission.Create, "", "ns", "p",
			mirrorWith(func(p *corev1.Pod) { p.OwnerReferences = append(p.OwnerReferences, p.OwnerReferences[0]) }), nil,
			`node "n1" can only create pods with a single owner reference set to itself`},
		{"mirror pod owned by n2", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) { p.OwnerReferences[0].Name = "n2" }), nil,
			`node "n1" can only create pods with an owner reference set to itself`},
		{"mirror pod owner not controller", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }), nil,
			`node "n1" can only create pods with a controller owner reference set to itself`},
		{"mirror pod blocking owner deletion", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = ptr.To(true) }), nil,
			`node "n1" must not set blockOwnerDeletion on an owner reference`},
		{"mirror pod with a stale node uid", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" }), nil,
			`node n1 UID mismatch: expected old got uid-n1`},
		{"mirror pod with a service account", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), nil,
			`node "n1" can not create pods that reference serviceaccounts`},
		{"mirror pod with a secret env", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}}}
		}), nil, `node "n1" can not create pods that reference secrets`},
		{"mirror pod with a configmap volume", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}
		}), nil, `node "n1" can not create pods that reference configmaps`},
		{"mirror pod with a claim", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		}), nil, `node "n1" can not create pods that reference persistentvolumeclaims`},
		{"mirror pod with host and downward volumes", n1, podsRes, admission.Create, "", "ns", "p", mirrorWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{}}}}}},
			}
		}), nil, ""},
		{"mirror pod for another node", n1, podsRes, admission.Create, "", "ns", "p", podOn("n2", true), nil, `node "n1" can only create pods with spec.nodeName set to itself`},
		{"status of own pod", n1, podsRes, admission.Update, "status", "ns", "p", podOn("n1", false), podOn("n1", false), ""},
		{"status of own pod relabelled", n1, podsRes, admission.Update, "status", "ns", "p", labelled(podOn("n1", false), "app", "web"), podOn("n1", false),
			`pods "p" is forbidden: node "n1" cannot update labels through pod status`},
		{"status of own pod, labels kept", n1, podsRes, admission.Update, "status", "ns", "p", labelled(podOn("n1", false), "app", "web"), labelled(podOn("n1", false), "app", "web"), ""},
		{"status of pod on n2", n1, podsRes, admission.Update, "status", "ns", "p", podOn("n2", false), podOn("n2", false),
			`pods "p" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{"pod spec update", n1, podsRes, admission.Update, "", "ns", "p", podOn("n1", false), podOn("n1", false), `unexpected operation "UPDATE"`},
		{"delete own pod", n1, podsRes, admission.Delete, "", "ns", "p", nil, podOn("n1", false), ""},
		{"delete pod on n2", n1, podsRes, admission.Delete, "", "ns", "p", nil, podOn("n2", false), `node "n1" can only delete pods with spec.nodeName set to itself`},
		{"evict own pod", n1, podsRes, admission.Create, "eviction", "ns", "on-n1", evictionOf("on-n1"), nil, ""},
		{"evict own pod named in the body only", n1, podsRes, admission.Create, "eviction", "ns", "", evictionOf("on-n1"), nil, ""},
		{"evict pod on n2", n1, podsRes, admission.Create, "eviction", "ns", "on-n2", evictionOf("on-n2"), nil,
			`pods "on-n2" is forbidden: node n1 can only evict pods with spec.nodeName set to itself`},
		{"evict without a pod name", n1, podsRes, admission.Create, "eviction", "ns", "", evictionOf(""), nil, "could not determine pod from request data"},
		{"own lease", n1, leasesRes, admission.Update, "", "kube-node-lease", "n1", nil, nil, ""},
		{"other lease", n1, leasesRes, admission.Create, "", "kube-node-lease", "n2", nil, nil, "can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", n1, leasesRes, admission.Create, "", "default", "n1", nil, nil, `can only access leases in the "kube-node-lease" namespace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: tt.op, Resource: tt.res, Subresource: tt.sub, Namespace: tt.ns, Name: tt.obj,
				Object: tt.new, OldObject: tt.old, User: tt.user}
			err := New(fakeNodes{}, fakePods{}).Validate(context.Background(), a)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want Forbidden with %q", err, tt.wantErr)
			}
		})
	}
}

// As upstream, a mirror pod for a node that is not registered is refused
// with the lookup's NotFound.
func TestMirrorPodOfUnknownNode(t *testing.T) {
	n3 := &request.User{Name: "system:node:n3", Groups: []string{"system:nodes"}}
	a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: podOn("n3", true), User: n3}
	if err := New(fakeNodes{}, fakePods{}).Validate(context.Background(), a); !apierrors.IsNotFound(err) {
		t.Fatalf("error %v, want NotFound", err)
	}
}

// A node evicting a pod that does not exist gets the lookup's NotFound, not
// a refusal.
func TestEvictionOfMissingPod(t *testing.T) {
	n1 := &request.User{Name: "system:node:n1", Groups: []string{"system:nodes"}}
	a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Subresource: "eviction", Namespace: "ns", Name: "gone",
		Object: evictionOf("gone"), User: n1}
	err := New(fakeNodes{}, fakePods{}).Validate(context.Background(), a)
	if !apierrors.IsNotFound(err) || err.Error() != `pods "gone" not found` {
		t.Fatalf("error %v, want NotFound pods \"gone\" not found", err)
	}
}
