package cacher

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// state is one stored version of an object: the bytes the storage holds
// until a watcher first needs the object, then the object decoded from
// them, shared read-only by every watcher.
type state struct {
	data []byte // read and dropped inside once
	// of is set for an object's last state carrying a later revision (a
	// deletion, or an update that takes it out of a watcher's selection):
	// that state's object, copied, at rev.
	of  *state
	rev int64 // the object's resourceVersion

	once sync.Once
	obj  runtime.Object
	err  error
}

// object decodes s once.
func (c *Cacher) object(s *state) (runtime.Object, error) {
	s.once.Do(func() {
		if s.of != nil {
			last, err := c.object(s.of)
			if err != nil {
				s.err = err
				return
			}
			obj := last.DeepCopyObject()
			if m, err := meta.Accessor(obj); err == nil {
				m.SetResourceVersion(strconv.FormatInt(s.rev, 10))
			}
			s.obj = obj
			return
		}
		s.obj, s.err = c.cfg.Decode(s.data, s.rev)
		s.data = nil
		if s.err == nil {
			s.obj.GetObjectKind().SetGroupVersionKind(c.cfg.GroupVersionKind)
		}
	})
	return s.obj, s.err
}

// event is one change, shared read-only by every watcher.
type event struct {
	typ watch.EventType // Bookmark for bookmarks
	key string
	rev int64
	// cur is the object as the change leaves it; for DELETED, its last
	// state carrying the deletion's revision, as clients receive it.
	cur *state
	// prev is the object's previous state (nil for ADDED).
	prev *state
	// mark is a bookmark's object.
	mark runtime.Object

	// left is prev carrying this event's revision, what a watcher whose
	// selection the object leaves receives as DELETED; made once.
	leftOnce sync.Once
	left     *state
}

func (e *event) leaving() *state {
	e.leftOnce.Do(func() { e.left = &state{of: e.prev, rev: e.rev} })
	return e.left
}
