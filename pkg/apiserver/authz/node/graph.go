// Package node is the Node authorization mode: a kubelet (user
// system:node:<name> in group system:nodes) may reach its own Node and
// Lease, the pods bound to it and the secrets, configmaps, service accounts
// and claims those pods use — nothing else. Which pod runs where, and what
// it uses, comes from a graph fed by a pod watch.
package node

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Ref names an object a pod uses.
type Ref struct {
	Resource  string // secrets, configmaps, serviceaccounts, persistentvolumeclaims
	Namespace string
	Name      string
}

// Graph records, per node, the pods bound to it and what they use.
type Graph struct {
	mu sync.RWMutex
	// pods maps ns/name to what the graph recorded for the pod.
	pods map[string]podEntry
	// uses counts, per node, the pods that use each object.
	uses map[string]map[Ref]int
}

type podEntry struct {
	node string
	refs []Ref
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{pods: map[string]podEntry{}, uses: map[string]map[Ref]int{}}
}

// PodOnNode reports whether pod ns/name is bound to node.
func (g *Graph) PodOnNode(node, ns, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.pods[ns+"/"+name]
	return ok && e.node == node
}

// NodeUses reports whether a pod bound to node uses ref.
func (g *Graph) NodeUses(node string, ref Ref) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.uses[node][ref] > 0
}

// Replace implements authz.Sink.
func (g *Graph) Replace(objs []runtime.Object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.pods)
	clear(g.uses)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			g.setLocked(p)
		}
	}
}

// Upsert implements authz.Sink.
func (g *Graph) Upsert(o runtime.Object) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(p.Namespace + "/" + p.Name)
	g.setLocked(p)
}

// Delete implements authz.Sink.
func (g *Graph) Delete(o runtime.Object) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(p.Namespace + "/" + p.Name)
}

func (g *Graph) setLocked(p *corev1.Pod) {
	if p.Spec.NodeName == "" {
		return // not bound yet: no kubelet may see it
	}
	e := podEntry{node: p.Spec.NodeName, refs: PodRefs(p)}
	g.pods[p.Namespace+"/"+p.Name] = e
	m := g.uses[e.node]
	if m == nil {
		m = map[Ref]int{}
		g.uses[e.node] = m
	}
	for _, r := range e.refs {
		m[r]++
	}
}

func (g *Graph) removeLocked(key string) {
	e, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	m := g.uses[e.node]
	for _, r := range e.refs {
		if m[r]--; m[r] <= 0 {
			delete(m, r)
		}
	}
	if len(m) == 0 {
		delete(g.uses, e.node)
	}
}

// PodRefs lists, without duplicates, the objects a kubelet must read to run p.
func PodRefs(p *corev1.Pod) []Ref {
	seen := map[Ref]bool{}
	var out []Ref
	add := func(resource, name string) {
		if name == "" {
			return
		}
		r := Ref{Resource: resource, Namespace: p.Namespace, Name: name}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	add("serviceaccounts", sa)
	for _, s := range p.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add("persistentvolumeclaims", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add("secrets", s.Secret.Name)
				}
				if s.ConfigMap != nil {
					add("configmaps", s.ConfigMap.Name)
				}
			}
		}
	}
	containers := make([]corev1.Container, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))
	containers = append(containers, p.Spec.InitContainers...)
	containers = append(containers, p.Spec.Containers...)
	for _, c := range containers {
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil {
				add("secrets", ef.SecretRef.Name)
			}
			if ef.ConfigMapRef != nil {
				add("configmaps", ef.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add("secrets", e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add("configmaps", e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	return out
}
