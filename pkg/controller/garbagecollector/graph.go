package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// node is one object of the ownership graph, reduced to what the collector
// needs from its metadata.
type node struct {
	uid        types.UID
	gvr        schema.GroupVersionResource
	kind       string
	namespace  string
	name       string
	rv         string
	owners     []metav1.OwnerReference
	finalizers []string
	deleting   bool
}

func (n *node) hasFinalizer(f string) bool { return slices.Contains(n.finalizers, f) }

// isReferencedBy says whether ref, held by an object of namespace ns, names
// n by more than its UID: kind, group, name, and the dependent's own
// namespace unless n is cluster-scoped. A reference that gets only the UID
// right (another name, or an owner in another namespace, which ownership
// cannot cross) names an object that does not exist, as upstream's lookup
// by the reference's coordinates finds.
func (n *node) isReferencedBy(ref metav1.OwnerReference, ns string) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == n.gvr.Group && ref.Kind == n.kind && ref.Name == n.name &&
		(n.namespace == "" || n.namespace == ns)
}

// graph indexes objects by UID and owners by the UIDs of their dependents.
type graph struct {
	mu         sync.RWMutex
	nodes      map[types.UID]*node
	dependents map[types.UID]map[types.UID]bool
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, dependents: map[types.UID]map[types.UID]bool{}}
}

func (g *graph) get(uid types.UID) *node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nodes[uid]
}

// upsert stores n and returns the node it replaced (nil if new).
func (g *graph) upsert(n *node) *node {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.nodes[n.uid]
	if old != nil {
		for _, r := range old.owners {
			g.unlink(r.UID, n.uid)
		}
	}
	g.nodes[n.uid] = n
	for _, r := range n.owners {
		if g.dependents[r.UID] == nil {
			g.dependents[r.UID] = map[types.UID]bool{}
		}
		g.dependents[r.UID][n.uid] = true
	}
	return old
}

func (g *graph) remove(uid types.UID) *node {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.nodes[uid]
	if old == nil {
		return nil
	}
	for _, r := range old.owners {
		g.unlink(r.UID, uid)
	}
	delete(g.nodes, uid)
	return old
}

func (g *graph) unlink(owner, dep types.UID) {
	if m := g.dependents[owner]; m != nil {
		delete(m, dep)
		if len(m) == 0 {
			delete(g.dependents, owner)
		}
	}
}

// dependentsOf returns the current nodes that list owner among their owners.
func (g *graph) dependentsOf(owner types.UID) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*node
	for uid := range g.dependents[owner] {
		if n := g.nodes[uid]; n != nil {
			out = append(out, n)
		}
	}
	return out
}
