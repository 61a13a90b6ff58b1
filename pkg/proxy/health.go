package proxy

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// health answers /healthz as upstream kube-proxy does: unhealthy once a
// change has waited longer than timeout for a sync; and, unlike upstream,
// before the first sync, so that "healthy" means the rules are in place.
type health struct {
	clock   clock.Clock
	timeout time.Duration

	mu            sync.Mutex
	lastUpdated   time.Time
	oldestPending time.Time // zero: nothing waits
}

func newHealth(c clock.Clock, timeout time.Duration) *health {
	return &health{clock: c, timeout: timeout}
}

func (h *health) queued() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.oldestPending.IsZero() {
		h.oldestPending = h.clock.Now()
	}
}

func (h *health) synced(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastUpdated = at
	h.oldestPending = time.Time{}
}

// proxierHealth and proxyHealth are upstream's JSON shape.
type proxierHealth struct {
	LastUpdated time.Time `json:"lastUpdated"`
	Healthy     bool      `json:"healthy"`
}

type proxyHealth struct {
	LastUpdated time.Time                `json:"lastUpdated"`
	CurrentTime time.Time                `json:"currentTime"`
	Healthy     bool                     `json:"healthy"`
	Status      map[string]proxierHealth `json:"status,omitempty"`
}

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	now := h.clock.Now()
	healthy := !h.lastUpdated.IsZero() && (h.oldestPending.IsZero() || now.Sub(h.oldestPending) < h.timeout)
	body := proxyHealth{LastUpdated: h.lastUpdated, CurrentTime: now, Healthy: healthy,
		Status: map[string]proxierHealth{"IPv4": {LastUpdated: h.lastUpdated, Healthy: healthy}}}
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if healthy {
		// Upstream reports "now" when healthy, for clients that compare
		// lastUpdated with their own clock.
		body.LastUpdated = now
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}
