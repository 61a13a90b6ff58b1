package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Defaults counted for containers without requests when scoring, as upstream
// does, so that request-less pods do not all pile onto one node.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is a flat, integer view of a ResourceList: quantities are parsed
// once when a pod or node enters the scheduler, never in Filter.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int64
	Scalar           map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if isScalar(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] += q.Value()
			}
		}
	}
}

func isScalar(name v1.ResourceName) bool {
	// Extended resources (vendor.com/x) and hugepages are counted; others
	// (e.g. storage) are not node-local quantities.
	s := string(name)
	if len(s) > 10 && s[:10] == "hugepages-" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i] != "kubernetes.io" && s[:i] != "requests.kubernetes.io"
		}
	}
	return false
}

func (r *Resource) add(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += sign * o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] += sign * v
	}
}

// Clone deep-copies r.
func (r Resource) Clone() Resource {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// HostPort is one requested host port.
type HostPort struct {
	IP       string
	Protocol v1.Protocol
	Port     int32
}

// Conflicts reports whether two host ports cannot both be bound: same
// protocol and port, and the same IP or either on the wildcard address.
func (h HostPort) Conflicts(o HostPort) bool {
	if h.Port != o.Port || h.Protocol != o.Protocol {
		return false
	}
	return h.IP == o.IP || h.IP == "0.0.0.0" || o.IP == "0.0.0.0"
}

// AffinityTerm is a parsed pod (anti-)affinity term.
type AffinityTerm struct {
	Namespaces     sets.Set[string]
	AllNamespaces  bool
	Selector       labels.Selector
	TopologyKey    string
	NamespaceLabel labels.Selector // non-empty namespaceSelector; see Matches
}

// WeightedAffinityTerm is a preferred term.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod is selected by the term. namespaceSelector
// with requirements would need Namespace objects; the scheduler does not
// watch them, so such a term matches only the namespaces listed explicitly.
func (t *AffinityTerm) Matches(pod *v1.Pod) bool {
	if !t.AllNamespaces && !t.Namespaces.Has(pod.Namespace) {
		return false
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("label selector: %w", err)
	}
	// A nil labelSelector matches nothing, as upstream.
	if term.LabelSelector == nil {
		sel = labels.Nothing()
	}
	at := AffinityTerm{Selector: sel, TopologyKey: term.TopologyKey, Namespaces: sets.New(term.Namespaces...)}
	switch {
	case term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0:
		at.AllNamespaces = true
	case term.NamespaceSelector == nil && len(term.Namespaces) == 0:
		at.Namespaces.Insert(pod.Namespace)
	}
	return at, nil
}

// PodInfo is a pod plus everything the plugins would otherwise recompute for
// every node: requests, host ports, parsed affinity terms.
type PodInfo struct {
	Pod *v1.Pod
	// Requests counts init containers (max of each init container and the
	// sum of the app containers, sidecars included) and overhead.
	Requests Resource
	// NonZeroRequests substitutes defaults for missing cpu/memory requests;
	// used only for scoring.
	NonZeroRequests Resource
	HostPorts       []HostPort

	RequiredAffinity      []AffinityTerm
	RequiredAntiAffinity  []AffinityTerm
	PreferredAffinity     []WeightedAffinityTerm
	PreferredAntiAffinity []WeightedAffinityTerm
	// ParseError is set when the pod's affinity could not be parsed; such a
	// pod is unschedulable with that error.
	ParseError error
}

var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
}

// NewPodInfo precomputes what plugins need about pod.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	pi.Requests = NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	nz := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults})
	pi.NonZeroRequests = Resource{MilliCPU: nz.Cpu().MilliValue(), Memory: nz.Memory().Value()}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
				if hp.IP == "" {
					hp.IP = "0.0.0.0"
				}
				if hp.Protocol == "" {
					hp.Protocol = v1.ProtocolTCP
				}
				pi.HostPorts = append(pi.HostPorts, hp)
			}
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				pi.addTerm(&pi.RequiredAffinity, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				pi.addWeighted(&pi.PreferredAffinity, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i])
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				pi.addTerm(&pi.RequiredAntiAffinity, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				pi.addWeighted(&pi.PreferredAntiAffinity, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i])
			}
		}
	}
	return pi
}

func (pi *PodInfo) addTerm(dst *[]AffinityTerm, t *v1.PodAffinityTerm) {
	at, err := newAffinityTerm(pi.Pod, t)
	if err != nil {
		pi.ParseError = err
		return
	}
	*dst = append(*dst, at)
}

func (pi *PodInfo) addWeighted(dst *[]WeightedAffinityTerm, t *v1.WeightedPodAffinityTerm) {
	at, err := newAffinityTerm(pi.Pod, &t.PodAffinityTerm)
	if err != nil {
		pi.ParseError = err
		return
	}
	*dst = append(*dst, WeightedAffinityTerm{AffinityTerm: at, Weight: t.Weight})
}

// HasAffinity reports any pod (anti-)affinity term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinity)+len(pi.RequiredAntiAffinity)+len(pi.PreferredAffinity)+len(pi.PreferredAntiAffinity) > 0
}

// NodeInfo is a node plus the pods the scheduler counts on it (bound and
// assumed) and their aggregate requests.
type NodeInfo struct {
	node *v1.Node
	Pods []*PodInfo
	// PodsWithAffinity and PodsWithRequiredAntiAffinity let InterPodAffinity
	// look only at the few pods that matter.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    []HostPort
	Requested                    Resource
	NonZeroRequested             Resource
	Allocatable                  Resource
	// Images maps every name of an image present on the node to its size.
	Images map[string]int64
	// Generation increases on every change; snapshots copy only nodes whose
	// generation is newer than theirs.
	Generation int64
}

// NewNodeInfo returns an info for node (which may be nil until the Node
// object is seen) with the given pods.
func NewNodeInfo(node *v1.Node, pods ...*PodInfo) *NodeInfo {
	ni := &NodeInfo{}
	if node != nil {
		ni.SetNode(node)
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the Node object (nil while only its pods are known).
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode records the Node object and its allocatable and images.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Images = make(map[string]int64, len(node.Status.Images)*2)
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.Images[NormalizeImageName(name)] = img.SizeBytes
		}
	}
}

// AddPod counts pod on this node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinity) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.UsedPorts = append(n.UsedPorts, pi.HostPorts...)
	n.Requested.add(&pi.Requests, 1)
	n.NonZeroRequested.add(&pi.NonZeroRequests, 1)
}

// RemovePod uncounts the pod with pod's UID; false if it was not counted.
func (n *NodeInfo) RemovePod(pod *v1.Pod) bool {
	idx := -1
	for i, p := range n.Pods {
		if p.Pod.UID == pod.UID {
			idx = i
			break
		}
	}
	if idx < 0 {
		return false
	}
	pi := n.Pods[idx]
	n.Pods = removeAt(n.Pods, idx)
	n.PodsWithAffinity = removePod(n.PodsWithAffinity, pi)
	n.PodsWithRequiredAntiAffinity = removePod(n.PodsWithRequiredAntiAffinity, pi)
	for _, hp := range pi.HostPorts {
		for i, u := range n.UsedPorts {
			if u == hp {
				n.UsedPorts = append(n.UsedPorts[:i], n.UsedPorts[i+1:]...)
				break
			}
		}
	}
	n.Requested.add(&pi.Requests, -1)
	n.NonZeroRequested.add(&pi.NonZeroRequests, -1)
	return true
}

func removeAt(s []*PodInfo, i int) []*PodInfo {
	last := len(s) - 1
	s[i] = s[last]
	s[last] = nil
	return s[:last]
}

func removePod(s []*PodInfo, pi *PodInfo) []*PodInfo {
	for i, p := range s {
		if p == pi {
			return removeAt(s, i)
		}
	}
	return s
}

// Snapshot returns a copy that later changes to n do not affect. Pod infos
// are immutable and shared; the slices holding them are copied.
func (n *NodeInfo) Snapshot() *NodeInfo {
	c := &NodeInfo{
		node:             n.node,
		Pods:             append([]*PodInfo(nil), n.Pods...),
		UsedPorts:        append([]HostPort(nil), n.UsedPorts...),
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		Images:           n.Images, // replaced, never mutated, by SetNode
		Generation:       n.Generation,
	}
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	return c
}

// NormalizeImageName adds the ":latest" tag that a bare name implies, so
// that "busybox" in a pod matches "busybox:latest" on the node.
func NormalizeImageName(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		switch name[i] {
		case ':', '@':
			return name
		case '/':
			return name + ":latest"
		}
	}
	return name + ":latest"
}
