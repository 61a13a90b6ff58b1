package framework

import "k8s.io/apimachinery/pkg/util/sets"

// StateData is what a plugin keeps between extension points of one cycle.
type StateData interface{}

// StateKey names a plugin's entry in the CycleState.
type StateKey string

// CycleState carries plugin data through one scheduling cycle of one pod.
// Writes happen only in the sequential extension points (PreFilter,
// PreScore, Reserve); Filter and Score, which run in parallel, only read, so
// no lock is needed.
type CycleState struct {
	data map[StateKey]StateData
	// skipFilter and skipScore hold the indexes of plugins that returned Skip.
	skipFilter uint64
	skipScore  uint64
	// nodeNames, unless nil, holds the only nodes PreFilter plugins (named
	// in restrictedBy) leave the pod: the others are not filtered at all,
	// and the pod's FailedScheduling message counts them apart, as upstream's
	// PreFilterResult.
	nodeNames    sets.Set[string]
	restrictedBy []string
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: make(map[StateKey]StateData, 8)}
}

// Read returns the data for key, or nil.
func (c *CycleState) Read(key StateKey) StateData { return c.data[key] }

// Write stores data for key.
func (c *CycleState) Write(key StateKey, d StateData) { c.data[key] = d }

// StateCloner is StateData that preemption may change for one node's
// simulation: Clone returns an independent copy. Data that is not a
// StateCloner is shared by clones, and must then never change.
type StateCloner interface {
	Clone() StateData
}

// Clone copies the state for a simulation on one node (preemption, pods
// nominated to a node), so that PreFilterExtensions may change it.
func (c *CycleState) Clone() *CycleState {
	out := &CycleState{data: make(map[StateKey]StateData, len(c.data)), skipFilter: c.skipFilter, skipScore: c.skipScore}
	for k, v := range c.data {
		if cl, ok := v.(StateCloner); ok {
			v = cl.Clone()
		}
		out.data[k] = v
	}
	return out
}

// RestrictNodes, called by plugin's PreFilter, narrows the nodes the pod
// may go to to names (intersected with what other plugins left).
func (c *CycleState) RestrictNodes(plugin string, names sets.Set[string]) {
	if c.nodeNames == nil {
		c.nodeNames = names.Clone()
	} else {
		c.nodeNames = c.nodeNames.Intersection(names)
	}
	c.restrictedBy = append(c.restrictedBy, plugin)
}

// NodeNames returns the nodes PreFilter left the pod (nil: all of them) and
// the plugins that narrowed them.
func (c *CycleState) NodeNames() (sets.Set[string], []string) {
	return c.nodeNames, c.restrictedBy
}
