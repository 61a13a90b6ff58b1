package cache

import (
	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Snapshot is a point-in-time copy of the cache that one scheduling cycle
// reads without locks. It is refreshed incrementally by UpdateSnapshot.
type Snapshot struct {
	infos            map[string]*framework.NodeInfo
	list             []*framework.NodeInfo
	withAffinity     []*framework.NodeInfo
	withAntiAffinity []*framework.NodeInfo
	imageNodes       map[string]int
	generation       int64
	nodeOrderGen     int64
	imageGen         int64
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{infos: map[string]*framework.NodeInfo{}, nodeOrderGen: -1, imageGen: -1}
}

// NewSnapshotFromNodeInfos builds a snapshot directly (for plugin tests).
func NewSnapshotFromNodeInfos(infos ...*framework.NodeInfo) *Snapshot {
	s := NewSnapshot()
	s.imageNodes = map[string]int{}
	for _, ni := range infos {
		s.infos[ni.Node().Name] = ni
		s.list = append(s.list, ni)
		for img := range ni.Images {
			s.imageNodes[img]++
		}
	}
	s.rebuildAffinityLists()
	return s
}

// List returns the nodes in a stable order.
func (s *Snapshot) List() []*framework.NodeInfo { return s.list }

// Get returns a node by name.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, bool) {
	ni, ok := s.infos[name]
	return ni, ok
}

// HavePodsWithAffinityList lists nodes with pods that have any pod affinity.
func (s *Snapshot) HavePodsWithAffinityList() []*framework.NodeInfo { return s.withAffinity }

// HavePodsWithRequiredAntiAffinityList lists nodes with pods that have
// required anti-affinity.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*framework.NodeInfo {
	return s.withAntiAffinity
}

// NumNodesWithImage counts nodes holding image.
func (s *Snapshot) NumNodesWithImage(image string) int { return s.imageNodes[image] }

func (s *Snapshot) rebuildAffinityLists() {
	s.withAffinity = s.withAffinity[:0]
	s.withAntiAffinity = s.withAntiAffinity[:0]
	for _, ni := range s.list {
		if len(ni.PodsWithAffinity) > 0 {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.withAntiAffinity = append(s.withAntiAffinity, ni)
		}
	}
}

// UpdateSnapshot brings s up to date, copying only the nodes that changed
// since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	affinityChanged := false
	for it := c.head; it != nil; it = it.next {
		if it.info.Generation <= s.generation {
			break
		}
		node := it.info.Node()
		if node == nil {
			continue
		}
		cp := it.info.Snapshot()
		existing, ok := s.infos[node.Name]
		if !ok {
			existing = &framework.NodeInfo{}
			s.infos[node.Name] = existing
		}
		if (len(existing.PodsWithAffinity) > 0) != (len(cp.PodsWithAffinity) > 0) ||
			(len(existing.PodsWithRequiredAntiAffinity) > 0) != (len(cp.PodsWithRequiredAntiAffinity) > 0) {
			affinityChanged = true
		}
		// Update in place: s.list holds these pointers.
		*existing = *cp
	}
	if c.head != nil {
		s.generation = c.head.info.Generation
	}
	if s.nodeOrderGen != c.nodeOrderGen {
		s.nodeOrderGen = c.nodeOrderGen
		s.list = s.list[:0]
		keep := make(map[string]*framework.NodeInfo, len(c.nodeOrder))
		for _, name := range c.nodeOrder {
			ni := s.infos[name]
			if ni == nil || ni.Node() == nil {
				continue
			}
			keep[name] = ni
			s.list = append(s.list, ni)
		}
		s.infos = keep
		affinityChanged = true
	}
	if affinityChanged {
		s.rebuildAffinityLists()
	}
	if s.imageGen != c.imageGen || s.imageNodes == nil {
		s.imageGen = c.imageGen
		// Image sets change only when nodes do; copying is rare.
		s.imageNodes = make(map[string]int, len(c.imageNodes))
		for k, v := range c.imageNodes {
			s.imageNodes[k] = v
		}
	}
}
