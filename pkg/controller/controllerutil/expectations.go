package controllerutil

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTTL bounds how long a controller waits for its own writes to
// show up in the cache before it trusts the cache again (a lost watch event
// must not wedge a controller forever).
const ExpectationsTTL = 5 * time.Minute

// Expectations remembers, per controller key, how many creates and deletes
// this process issued but has not yet seen come back through the informer.
// While any are outstanding the controller must not act on its counts,
// otherwise a slow cache would make it create (or delete) twice.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

type expectation struct {
	add, del  int
	timestamp time.Time
}

// NewExpectations returns an empty tracker.
func NewExpectations(c clock.PassiveClock) *Expectations {
	return &Expectations{clock: c, m: map[string]*expectation{}}
}

// Satisfied reports whether the controller may trust its cache for key.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.add <= 0 && x.del <= 0 {
		return true
	}
	return e.clock.Since(x.timestamp) > ExpectationsTTL
}

// Expect records that adds creates and dels deletes are about to be issued.
// It replaces any earlier record, because callers only call it once they
// were Satisfied.
func (e *Expectations) Expect(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{add: adds, del: dels, timestamp: e.clock.Now()}
}

// CreationObserved lowers the pending creates (seen, or known to have failed).
func (e *Expectations) CreationObserved(key string) { e.lower(key, 1, 0) }

// DeletionObserved lowers the pending deletes.
func (e *Expectations) DeletionObserved(key string) { e.lower(key, 0, 1) }

// Forget drops the record, e.g. when the controller object is deleted.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

func (e *Expectations) lower(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.add -= add
		x.del -= del
	}
}
