package queue

import "container/heap"

// keyedHeap is a heap of items that can also be found, updated and removed
// by key.
type keyedHeap struct {
	items []*QueuedPodInfo
	index map[string]int
	less  func(a, b *QueuedPodInfo) bool
}

func newKeyedHeap(less func(a, b *QueuedPodInfo) bool) *keyedHeap {
	return &keyedHeap{index: map[string]int{}, less: less}
}

func (h *keyedHeap) Len() int           { return len(h.items) }
func (h *keyedHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *keyedHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].key] = i
	h.index[h.items[j].key] = j
}
func (h *keyedHeap) Push(x any) {
	p := x.(*QueuedPodInfo)
	h.index[p.key] = len(h.items)
	h.items = append(h.items, p)
}
func (h *keyedHeap) Pop() any {
	n := len(h.items) - 1
	p := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	delete(h.index, p.key)
	return p
}

// AddOrUpdate inserts p or replaces the item with its key.
func (h *keyedHeap) AddOrUpdate(p *QueuedPodInfo) {
	if i, ok := h.index[p.key]; ok {
		h.items[i] = p
		heap.Fix(h, i)
		return
	}
	heap.Push(h, p)
}

func (h *keyedHeap) Get(key string) (*QueuedPodInfo, bool) {
	i, ok := h.index[key]
	if !ok {
		return nil, false
	}
	return h.items[i], true
}

func (h *keyedHeap) Delete(key string) bool {
	i, ok := h.index[key]
	if !ok {
		return false
	}
	heap.Remove(h, i)
	return true
}

func (h *keyedHeap) Peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *keyedHeap) PopTop() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*QueuedPodInfo)
}
