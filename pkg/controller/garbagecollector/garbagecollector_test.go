package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var (
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	rsGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

type obj struct {
	gvr        schema.GroupVersionResource
	kind, name string
	// ns is the object's namespace: default unless set, none for nodes.
	ns         string
	uid        types.UID
	owners     []metav1.OwnerReference
	finalizers []string
	deleting   bool
}

func (o obj) unstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(o.gvr.GroupVersion().String())
	u.SetKind(o.kind)
	u.SetNamespace(o.namespace())
	u.SetName(o.name)
	u.SetUID(o.uid)
	u.SetResourceVersion("1")
	u.SetOwnerReferences(o.owners)
	u.SetFinalizers(o.finalizers)
	if o.deleting {
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
	}
	return u
}

func (o obj) namespace() string {
	switch {
	case o.gvr == nodesGVR:
		return ""
	case o.ns != "":
		return o.ns
	}
	return "default"
}

func ownedBy(name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid, BlockOwnerDeletion: &block}
}

func rs(name string, uid types.UID) obj {
	return obj{gvr: rsGVR, kind: "ReplicaSet", name: name, uid: uid}
}

func pod(name string, owners ...metav1.OwnerReference) obj {
	return obj{gvr: podsGVR, kind: "Pod", name: name, uid: types.UID(name + "-uid"), owners: owners}
}

type fixture struct {
	t      *testing.T
	client *dynamicfake.FakeDynamicClient
	gc     *Controller
}

// newFixture puts server objects on the fake apiserver and graph objects in
// the collector's graph: the two differ when the informers lag.
func newFixture(t *testing.T, server []obj, graphOnly ...obj) *fixture {
	scheme := runtime.NewScheme()
	var objs []runtime.Object
	for _, o := range server {
		objs = append(objs, o.unstructured())
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{podsGVR: "PodList", rsGVR: "ReplicaSetList", nodesGVR: "NodeList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	gc := New(client, disc, mapper, nil, nil)
	for _, o := range append(server, graphOnly...) {
		gc.graph.upsert(&node{uid: o.uid, gvr: o.gvr, kind: o.kind, namespace: o.namespace(), name: o.name, rv: "1", owners: o.owners, finalizers: o.finalizers, deleting: o.deleting})
	}
	return &fixture{t: t, client: client, gc: gc}
}

func (f *fixture) sync(uid types.UID) {
	f.t.Helper()
	if err := f.gc.sync(context.Background(), string(uid)); err != nil {
		f.t.Fatalf("sync %s: %v", uid, err)
	}
}

func (f *fixture) forget(uid types.UID) { f.gc.graph.remove(uid) }

func (f *fixture) get(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	u, err := f.client.Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return u
}

func (f *fixture) deletes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			out = append(out, d.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestAttemptToDelete(t *testing.T) {
	tests := []struct {
		name        string
		server      []obj
		graphOnly   []obj
		notInGraph  []types.UID
		dep         string
		wantDeleted []string
		wantOwners  []types.UID
	}{
		{name: "owner gone: dependent deleted",
			server: []obj{pod("p", ownedBy("rs", "rs-uid", true))}, dep: "p", wantDeleted: []string{"p"}},
		{name: "owner present: dependent kept",
			server: []obj{rs("rs", "rs-uid"), pod("p", ownedBy("rs", "rs-uid", true))}, dep: "p", wantOwners: []types.UID{"rs-uid"}},
		{name: "owner not seen yet by the informers but on the server: kept",
			server: []obj{rs("rs", "rs-uid"), pod("p", ownedBy("rs", "rs-uid", true))}, notInGraph: []types.UID{"rs-uid"}, dep: "p", wantOwners: []types.UID{"rs-uid"}},
		{name: "owner recreated under the same name: dependent deleted",
			server: []obj{rs("rs", "new-uid"), pod("p", ownedBy("rs", "rs-uid", true))}, notInGraph: []types.UID{"new-uid"}, dep: "p", wantDeleted: []string{"p"}},
		{name: "one owner gone, one present: only the reference goes",
			server: []obj{rs("a", "a-uid"), pod("p", ownedBy("a", "a-uid", false), ownedBy("b", "b-uid", false))}, dep: "p", wantOwners: []types.UID{"a-uid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.server, tt.graphOnly...)
			for _, uid := range tt.notInGraph {
				f.forget(uid)
			}
			f.sync(types.UID(tt.dep + "-uid"))
			if got := f.deletes(); !slices.Equal(got, tt.wantDeleted) {
				t.Fatalf("deleted %v, want %v", got, tt.wantDeleted)
			}
			if tt.wantDeleted != nil {
				return
			}
			p := f.get(podsGVR, tt.dep)
			var owners []types.UID
			for _, r := range p.GetOwnerReferences() {
				owners = append(owners, r.UID)
			}
			if !slices.Equal(owners, tt.wantOwners) {
				t.Fatalf("owners %v, want %v", owners, tt.wantOwners)
			}
		})
	}
}

// An owner reference names its owner by kind, name and UID, in the
// dependent's namespace unless the owner is cluster-scoped. As upstream,
// which looks the owner up by those coordinates: a reference that matches
// an object's UID only (ownership across namespaces, or another name)
// names no owner, and its dependent goes; a cluster-scoped object naming a
// namespaced owner is left alone, as that can never resolve.
func TestOwnerReferenceNamesTheOwner(t *testing.T) {
	inOther := pod("p", ownedBy("rs", "rs-uid", true))
	inOther.ns = "other"
	node := obj{gvr: nodesGVR, kind: "Node", name: "n", uid: "n-uid", owners: []metav1.OwnerReference{ownedBy("rs", "rs-uid", true)}}
	for _, tt := range []struct {
		name        string
		server      []obj
		dep         types.UID
		wantDeleted []string
	}{
		{name: "owner in another namespace", server: []obj{rs("rs", "rs-uid"), inOther}, dep: "p-uid", wantDeleted: []string{"p"}},
		{name: "the owner's UID under another name", server: []obj{rs("rs", "rs-uid"), pod("p", ownedBy("renamed", "rs-uid", true))}, dep: "p-uid", wantDeleted: []string{"p"}},
		{name: "cluster-scoped object with a namespaced owner", server: []obj{rs("rs", "rs-uid"), node}, dep: "n-uid"},
		{name: "cluster-scoped object with a namespaced owner that is gone", server: []obj{node}, dep: "n-uid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.server)
			f.sync(tt.dep)
			if got := f.deletes(); !slices.Equal(got, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tt.wantDeleted)
			}
			for _, a := range f.client.Actions() {
				if a.GetVerb() == "patch" {
					t.Errorf("patched %v", a)
				}
			}
		})
	}
}

func TestForegroundDeletionWaitsForBlockingDependents(t *testing.T) {
	owner := rs("rs", "rs-uid")
	owner.deleting = true
	owner.finalizers = []string{metav1.FinalizerDeleteDependents}
	f := newFixture(t, []obj{owner, pod("p", ownedBy("rs", "rs-uid", true))})

	f.sync("rs-uid")
	if fins := f.get(rsGVR, "rs").GetFinalizers(); !slices.Equal(fins, []string{metav1.FinalizerDeleteDependents}) {
		t.Fatalf("owner finalizers %v while a blocking dependent exists", fins)
	}
	// The dependent is deleted next, in the background: it has no dependents.
	f.sync("p-uid")
	if got := f.deletes(); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("deleted %v, want [p]", got)
	}
	f.forget("p-uid")
	f.sync("rs-uid")
	if fins := f.get(rsGVR, "rs").GetFinalizers(); len(fins) != 0 {
		t.Fatalf("owner finalizers %v after its dependents went, want none", fins)
	}
}

func TestForegroundDeletionUnblocksDependentWithAnotherOwner(t *testing.T) {
	owner := rs("rs", "rs-uid")
	owner.deleting = true
	owner.finalizers = []string{metav1.FinalizerDeleteDependents}
	f := newFixture(t, []obj{owner, rs("other", "other-uid"), pod("p", ownedBy("rs", "rs-uid", true), ownedBy("other", "other-uid", false))})
	f.sync("p-uid")
	if got := f.deletes(); len(got) != 0 {
		t.Fatalf("deleted %v; the other owner keeps it", got)
	}
	// As upstream, the reference to the owner being deleted goes.
	refs := f.get(podsGVR, "p").GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != "other-uid" {
		t.Fatalf("dependent's owner references %+v, want only the other owner's", refs)
	}
}

// An object whose owner waits for it in the foreground, and which has a
// dependent waiting in the foreground too (the same owner when they own
// each other), stops blocking its owners before it is deleted in the
// foreground, as upstream: else each waits for the other forever. Without
// such a dependent it keeps blocking, so the owner waits for the subtree.
func TestForegroundDeletionBreaksOwnershipCycles(t *testing.T) {
	for _, tt := range []struct {
		name          string
		childDeleting bool
		wantBlocking  bool
	}{
		{name: "dependent being deleted in the foreground", childDeleting: true, wantBlocking: false},
		{name: "dependent not being deleted", wantBlocking: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			owner := rs("a", "a-uid")
			owner.deleting = true
			owner.finalizers = []string{metav1.FinalizerDeleteDependents}
			// b is owned by a; c (a itself in a cycle of two) is owned by b.
			b := rs("b", "b-uid")
			b.owners = []metav1.OwnerReference{ownedBy("a", "a-uid", true)}
			child := rs("c", "c-uid")
			child.owners = []metav1.OwnerReference{ownedBy("b", "b-uid", true)}
			if tt.childDeleting {
				child.deleting = true
				child.finalizers = []string{metav1.FinalizerDeleteDependents}
			}
			f := newFixture(t, []obj{owner, b, child})
			// A foreground deletion leaves b there, waiting for c.
			f.client.PrependReactor("delete", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			f.sync("b-uid")
			var got []metav1.DeletionPropagation
			for _, a := range f.client.Actions() {
				if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.DeleteOptions.PropagationPolicy != nil {
					got = append(got, *d.DeleteOptions.PropagationPolicy)
				}
			}
			if !slices.Equal(got, []metav1.DeletionPropagation{metav1.DeletePropagationForeground}) {
				t.Errorf("b deleted with %v, want [Foreground]", got)
			}
			refs := f.get(rsGVR, "b").GetOwnerReferences()
			if len(refs) != 1 || ptr.Deref(refs[0].BlockOwnerDeletion, false) != tt.wantBlocking {
				t.Errorf("b's owner references %+v, want one blocking %t", refs, tt.wantBlocking)
			}
		})
	}
}

func TestOrphanDeletion(t *testing.T) {
	owner := rs("rs", "rs-uid")
	owner.deleting = true
	owner.finalizers = []string{metav1.FinalizerOrphanDependents, "example.com/keep"}
	f := newFixture(t, []obj{owner, pod("a", ownedBy("rs", "rs-uid", true)), pod("b", ownedBy("rs", "rs-uid", true))})
	f.sync("rs-uid")
	for _, name := range []string{"a", "b"} {
		if refs := f.get(podsGVR, name).GetOwnerReferences(); len(refs) != 0 {
			t.Errorf("pod %s still owned: %v", name, refs)
		}
	}
	if fins := f.get(rsGVR, "rs").GetFinalizers(); !slices.Equal(fins, []string{"example.com/keep"}) {
		t.Errorf("owner finalizers %v, want only the foreign one left", fins)
	}
	if got := f.deletes(); len(got) != 0 {
		t.Errorf("deleted %v; orphaning deletes nothing", got)
	}
}

// A dependent that already carries the orphan or foreground finalizer is
// deleted with that propagation, as upstream: Background would strip the
// finalizer and take the dependent's own dependents with it.
func TestAttemptToDeleteHonoursFinalizers(t *testing.T) {
	for _, tt := range []struct {
		finalizer string
		want      metav1.DeletionPropagation
	}{
		{"", metav1.DeletePropagationBackground},
		{metav1.FinalizerOrphanDependents, metav1.DeletePropagationOrphan},
		{metav1.FinalizerDeleteDependents, metav1.DeletePropagationForeground},
	} {
		t.Run(string(tt.want), func(t *testing.T) {
			dep := obj{gvr: rsGVR, kind: "ReplicaSet", name: "child", uid: "child-uid", owners: []metav1.OwnerReference{ownedBy("gone", "gone-uid", true)}}
			if tt.finalizer != "" {
				dep.finalizers = []string{tt.finalizer}
			}
			f := newFixture(t, []obj{dep})
			f.sync("child-uid")
			var got []metav1.DeletionPropagation
			for _, a := range f.client.Actions() {
				if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.DeleteOptions.PropagationPolicy != nil {
					got = append(got, *d.DeleteOptions.PropagationPolicy)
				}
			}
			if !slices.Equal(got, []metav1.DeletionPropagation{tt.want}) {
				t.Errorf("deleted with %v, want %v", got, tt.want)
			}
		})
	}
}

// recorded is an event as the recorder got it.
type recorded struct {
	ref                    corev1.ObjectReference
	eventType, reason, msg string
}

type fakeRecorder struct {
	mu     sync.Mutex
	events []recorded
}

func (r *fakeRecorder) Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{ref: *obj.(*corev1.ObjectReference), eventType: eventType, reason: reason, msg: fmt.Sprintf(messageFmt, args...)})
}

// A dependent naming a namespaced owner of another namespace gets upstream's
// OwnerRefInvalidNamespace warning, which `kubectl describe` shows, whether
// the owner or the dependent is seen first; once, not on every update.
func TestOwnerOfAnotherNamespaceIsReported(t *testing.T) {
	owner := rs("rs", "rs-uid")
	owner.ns = "a"
	inOther := pod("p", ownedBy("rs", "rs-uid", true))
	inOther.ns = "b"
	sameNS := pod("q", ownedBy("rs", "rs-uid", true))
	sameNS.ns = "a"
	clusterScoped := obj{gvr: nodesGVR, kind: "Node", name: "n", uid: "n-uid", owners: []metav1.OwnerReference{ownedBy("rs", "rs-uid", true)}}
	clusterOwner := obj{gvr: nodesGVR, kind: "Node", name: "n", uid: "n-uid"}
	ownedByNode := pod("r", metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n", UID: "n-uid"})
	podEvent := recorded{ref: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "b", Name: "p", UID: "p-uid"},
		eventType: corev1.EventTypeWarning, reason: "OwnerRefInvalidNamespace",
		msg: `ownerRef [apps/v1/ReplicaSet, namespace: b, name: rs, uid: rs-uid] does not exist in namespace "b"`}
	nodeEvent := recorded{ref: corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "n", UID: "n-uid"},
		eventType: corev1.EventTypeWarning, reason: "OwnerRefInvalidNamespace",
		msg: `ownerRef [apps/v1/ReplicaSet, namespace: , name: rs, uid: rs-uid] does not exist in namespace ""`}
	for _, tt := range []struct {
		name  string
		added []obj
		want  []recorded
	}{
		{name: "owner first", added: []obj{owner, inOther, inOther}, want: []recorded{podEvent}},
		{name: "dependent first", added: []obj{inOther, owner, owner}, want: []recorded{podEvent}},
		{name: "cluster-scoped dependent", added: []obj{owner, clusterScoped}, want: []recorded{nodeEvent}},
		{name: "cluster-scoped dependent first", added: []obj{clusterScoped, owner}, want: []recorded{nodeEvent}},
		{name: "same namespace", added: []obj{owner, sameNS}},
		{name: "cluster-scoped owner", added: []obj{clusterOwner, ownedByNode}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			rec := &fakeRecorder{}
			f.gc.Events = rec
			for _, o := range tt.added {
				h := f.gc.handler(o.gvr)
				h.OnAdd(o.unstructured(), false)
			}
			if !slices.Equal(rec.events, tt.want) {
				t.Fatalf("events %+v, want %+v", rec.events, tt.want)
			}
		})
	}
}
