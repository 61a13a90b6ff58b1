// Package backoff tracks per-key exponential back-off for container
// restarts and image pulls, the way the kubelet reports CrashLoopBackOff and
// ImagePullBackOff.
package backoff

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Backoff doubles a key's delay from Initial up to Max each time Next is
// called; a key whose last event is older than ResetAfter starts over.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	ResetAfter time.Duration

	clock   clock.PassiveClock
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	delay time.Duration
	last  time.Time
}

// New returns a back-off with upstream's reset rule (2×max) unless resetAfter is set.
func New(c clock.PassiveClock, initial, maxDelay, resetAfter time.Duration) *Backoff {
	if resetAfter <= 0 {
		resetAfter = 2 * maxDelay
	}
	return &Backoff{Initial: initial, Max: maxDelay, ResetAfter: resetAfter, clock: c, entries: map[string]*entry{}}
}

// Next records an event at eventTime (e.g. the restart of a container whose
// last run ended then) and grows the key's delay.
func (b *Backoff) Next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || eventTime.Sub(e.last) > b.ResetAfter {
		b.entries[key] = &entry{delay: b.Initial, last: eventTime}
		return
	}
	e.delay *= 2
	if e.delay > b.Max {
		e.delay = b.Max
	}
	e.last = eventTime
}

// InBackOffSince reports whether, for something that happened at eventTime
// (a container's exit, a failed pull), the key must still wait, and how long.
func (b *Backoff) InBackOffSince(key string, eventTime time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, 0
	}
	if b.clock.Since(e.last) > b.ResetAfter {
		return false, 0
	}
	left := e.delay - b.clock.Since(eventTime)
	return left > 0, left
}

// Delay is the key's current delay (0 when it has none).
func (b *Backoff) Delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// Forget drops a key, e.g. when its pod is gone.
func (b *Backoff) Forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// ForgetPrefix drops every key that starts with prefix (all of one pod's).
func (b *Backoff) ForgetPrefix(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.entries, k)
		}
	}
}

// InBackOffSinceUpdate is InBackOffSince measured from the key's last Next,
// for things (image pulls) whose failure is the event itself.
func (b *Backoff) InBackOffSinceUpdate(key string) (bool, time.Duration) {
	b.mu.Lock()
	e, ok := b.entries[key]
	var last time.Time
	if ok {
		last = e.last
	}
	b.mu.Unlock()
	if !ok {
		return false, 0
	}
	return b.InBackOffSince(key, last)
}
