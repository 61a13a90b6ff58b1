package webhookclient

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Cache remembers answers until they expire. Keys are stored as hashes so
// that bearer tokens used as keys are not kept in memory. Callers pass the
// time, which they read once per review, so that an answer's lifetime
// starts when the review started.
type Cache[V any] struct {
	mu sync.Mutex
	m  map[[32]byte]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// NewCache returns an empty cache.
func NewCache[V any]() *Cache[V] {
	return &Cache[V]{m: map[[32]byte]entry[V]{}}
}

// Get returns the answer stored for key if it has not expired at now.
func (c *Cache[V]) Get(key []byte, now time.Time) (V, bool) {
	h := sha256.Sum256(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[h]
	if !ok {
		var zero V
		return zero, false
	}
	if !now.Before(e.expires) {
		delete(c.m, h)
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put stores v for key until now+ttl; a ttl of zero or less stores nothing.
// Expired answers are dropped here, so the cache holds only live ones.
func (c *Cache[V]) Put(key []byte, v V, now time.Time, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	h := sha256.Sum256(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if !now.Before(e.expires) {
			delete(c.m, k)
		}
	}
	c.m[h] = entry[V]{v: v, expires: now.Add(ttl)}
}
