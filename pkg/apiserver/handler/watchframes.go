package handler

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	// watchFrameSlots is how many recent frames are kept: every watch of a
	// resource sends an event within moments of the others, so a few
	// hundred cover a burst across all resources.
	watchFrameSlots = 256
	// maxSharedFrame bounds what one slot holds; larger objects are encoded
	// by each watch (the slots keep their objects alive too).
	maxSharedFrame = 32 << 10
)

// watchFrames remembers recently encoded watch frames by the object they
// carry. The watch cache hands one object to every watch of a resource, so
// the first watch to send an event encodes it and the others write the same
// bytes, as upstream's caching objects do; only such watches
// (storage.SharedWatch) use the frames. Shared objects are never written
// to, so a frame stays true to its object while the slot holds it.
type watchFrames struct {
	mu     sync.Mutex
	frames map[frameKey][]byte
	ring   [watchFrameSlots]frameKey // insertion order, for eviction
	next   int
}

// frameKey: the same object makes a different frame per event type (a
// selection turns MODIFIED into ADDED) and per wire format.
type frameKey struct {
	obj   runtime.Object
	typ   watch.EventType
	proto bool
}

func newWatchFrames() *watchFrames {
	return &watchFrames{frames: make(map[frameKey][]byte, watchFrameSlots)}
}

func (f *watchFrames) get(k frameKey) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.frames[k]
	return b, ok
}

// put keeps a copy of frame for k, evicting the oldest slot.
func (f *watchFrames) put(k frameKey, frame []byte) {
	if len(frame) > maxSharedFrame {
		return
	}
	b := append([]byte(nil), frame...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.frames[k]; ok {
		return
	}
	if old := f.ring[f.next]; old.obj != nil {
		delete(f.frames, old)
	}
	f.ring[f.next] = k
	f.next = (f.next + 1) % watchFrameSlots
	f.frames[k] = b
}
