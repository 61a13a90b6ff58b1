// Package cache keeps the scheduler's view of nodes and the pods counted on
// them: bound pods from the informer and assumed pods whose binding is in
// flight, so that two pods in a row never both take the last slot.
package cache

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

type podState struct {
	pod  *v1.Pod
	info *framework.PodInfo
	// deadline is set when the binding call returned: an assumed pod the
	// informer has still not confirmed by then is dropped.
	deadline        time.Time
	bindingFinished bool
}

// item is a node in the recency list: the most recently changed node first,
// so that a snapshot walks only what changed since it was taken.
type item struct {
	info       *framework.NodeInfo
	prev, next *item
}

// Cache is safe for concurrent use.
type Cache struct {
	clock clock.Clock
	ttl   time.Duration

	mu         sync.RWMutex
	generation int64
	nodes      map[string]*item
	head       *item
	// nodeOrder is the order snapshots list nodes in; it changes only when
	// nodes come or go.
	nodeOrder      []string
	nodeOrderGen   int64
	assumed        map[types.UID]bool
	pods           map[types.UID]*podState
	imageNodes     map[string]int
	imageGen       int64
	removedSinceGC bool
}

// New returns an empty cache. ttl bounds how long an assumed pod whose
// binding finished waits for the informer to confirm it.
func New(clk clock.Clock, ttl time.Duration) *Cache {
	return &Cache{clock: clk, ttl: ttl, nodes: map[string]*item{}, assumed: map[types.UID]bool{},
		pods: map[types.UID]*podState{}, imageNodes: map[string]int{}}
}

func (c *Cache) nextGen() int64 {
	c.generation++
	return c.generation
}

// touch marks a node changed and moves it to the head of the recency list.
func (c *Cache) touch(it *item) {
	it.info.Generation = c.nextGen()
	if c.head == it {
		return
	}
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	it.prev = nil
	it.next = c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *item) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

func (c *Cache) nodeItem(name string) *item {
	it, ok := c.nodes[name]
	if !ok {
		it = &item{info: framework.NewNodeInfo(nil)}
		c.nodes[name] = it
	}
	return it
}

// AssumePod counts pod (with spec.nodeName set) on its node before the
// binding is confirmed.
func (c *Cache) AssumePod(pi *framework.PodInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pod := pi.Pod
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s/%s (%s) is already in the cache", pod.Namespace, pod.Name, pod.UID)
	}
	c.addPodLocked(pi)
	c.assumed[pod.UID] = true
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod.
func (c *Cache) FinishBinding(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok && c.assumed[pod.UID] {
		ps.bindingFinished = true
		ps.deadline = c.clock.Now().Add(c.ttl)
	}
}

// ForgetPod uncounts an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assumed[pod.UID] {
		c.removePodLocked(c.pods[pod.UID].pod)
	}
}

// HasPod reports whether pod is counted on a node, assumed or bound: such a
// pod needs no scheduling.
func (c *Cache) HasPod(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.pods[pod.UID]
	return ok
}

// IsAssumedPod reports whether pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.assumed[pod.UID]
}

func (c *Cache) addPodLocked(pi *framework.PodInfo) {
	it := c.nodeItem(pi.Pod.Spec.NodeName)
	it.info.AddPod(pi)
	c.touch(it)
	c.pods[pi.Pod.UID] = &podState{pod: pi.Pod, info: pi}
}

func (c *Cache) removePodLocked(pod *v1.Pod) {
	ps, ok := c.pods[pod.UID]
	if !ok {
		return
	}
	if it, ok := c.nodes[ps.pod.Spec.NodeName]; ok {
		it.info.RemovePod(ps.pod)
		if it.info.Node() == nil && len(it.info.Pods) == 0 {
			c.unlink(it)
			delete(c.nodes, ps.pod.Spec.NodeName)
			c.removedSinceGC = true
		} else {
			c.touch(it)
		}
	}
	delete(c.pods, pod.UID)
	delete(c.assumed, pod.UID)
}

// AddPod records a bound pod from the informer; it confirms an assumed one.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		if c.assumed[pod.UID] {
			if ps.pod.Spec.NodeName != pod.Spec.NodeName {
				slog.Warn("pod was bound to a different node than assumed", "pod", pod.Namespace+"/"+pod.Name,
					"assumed", ps.pod.Spec.NodeName, "actual", pod.Spec.NodeName)
			}
			c.removePodLocked(ps.pod)
			c.addPodLocked(framework.NewPodInfo(pod))
			return
		}
		c.removePodLocked(ps.pod)
	}
	c.addPodLocked(framework.NewPodInfo(pod))
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(pod *v1.Pod) {
	c.AddPod(pod)
}

// RemovePod uncounts a pod that was deleted or finished.
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removePodLocked(pod)
}

// AddNode adds or updates a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, existed := c.nodes[node.Name]
	if existed && it.info.Node() != nil {
		old := it.info.Images
		it.info.SetNode(node)
		// Heartbeats rarely change images; recount only when they do, so
		// that snapshots need not copy the image counts.
		if !sameImages(old, it.info.Images) {
			c.removeImages(old)
			c.addImagesLocked(it.info)
		}
		c.touch(it)
		return
	}
	it = c.nodeItem(node.Name)
	c.nodeOrder = append(c.nodeOrder, node.Name)
	c.nodeOrderGen++
	it.info.SetNode(node)
	c.addImagesLocked(it.info)
	c.touch(it)
}

// UpdateNode is AddNode.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode forgets a node; its pods stay counted until they go too.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[node.Name]
	if !ok || it.info.Node() == nil {
		return
	}
	c.removeImagesLocked(it.info)
	for i, n := range c.nodeOrder {
		if n == node.Name {
			c.nodeOrder = append(c.nodeOrder[:i:i], c.nodeOrder[i+1:]...)
			break
		}
	}
	c.nodeOrderGen++
	if len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, node.Name)
	} else {
		// Keep the pods' accounting under a node-less info; it leaves the
		// snapshot because snapshots skip infos without a node.
		ni := framework.NewNodeInfo(nil, it.info.Pods...)
		it.info = ni
		c.touch(it)
	}
	c.removedSinceGC = true
}

func (c *Cache) addImagesLocked(ni *framework.NodeInfo) {
	for img := range ni.Images {
		c.imageNodes[img]++
	}
	if len(ni.Images) > 0 {
		c.imageGen++
	}
}

func (c *Cache) removeImagesLocked(ni *framework.NodeInfo) { c.removeImages(ni.Images) }

func (c *Cache) removeImages(images map[string]int64) {
	for img := range images {
		if c.imageNodes[img]--; c.imageNodes[img] <= 0 {
			delete(c.imageNodes, img)
		}
	}
	if len(images) > 0 {
		c.imageGen++
	}
}

func sameImages(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// CleanupExpiredAssumedPods drops assumed pods whose binding finished more
// than ttl ago without the informer confirming them.
func (c *Cache) CleanupExpiredAssumedPods() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for uid := range c.assumed {
		ps := c.pods[uid]
		if ps.bindingFinished && now.After(ps.deadline) {
			slog.Warn("assumed pod expired", "pod", ps.pod.Namespace+"/"+ps.pod.Name, "node", ps.pod.Spec.NodeName)
			c.removePodLocked(ps.pod)
		}
	}
}

// NodeCount and PodCount are for tests and debugging.
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodeOrder)
}

// PodCount counts bound and assumed pods.
func (c *Cache) PodCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.pods)
}
