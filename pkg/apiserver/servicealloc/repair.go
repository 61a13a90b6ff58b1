package servicealloc

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Holding is a value a Service holds, as the Service says.
type Holding struct {
	Value string
	Owner Owner
}

// Plan is what one repair pass does.
type Plan struct {
	// Release are claims no Service holds, older than the grace period.
	Release []Claim
	// Claim are values Services hold without a claim (lost, or written
	// before the allocator existed).
	Claim []Holding
}

// Decide compares the claims with what the Services hold. A claim nobody
// holds is a leak only once older than grace: a create in flight claims
// before its Service is stored. Claims must be listed before the Services,
// so that every Service listed had claimed what it holds by then.
func Decide(claims []Claim, held []Holding, now time.Time, grace time.Duration) Plan {
	var p Plan
	claimed := make(map[string]bool, len(claims))
	holders := make(map[string]bool, len(held))
	for _, h := range held {
		holders[h.Value] = true
	}
	for _, c := range claims {
		claimed[c.Value] = true
		if !holders[c.Value] && now.Sub(c.Claimed) > grace {
			p.Release = append(p.Release, c)
		}
	}
	seen := map[string]bool{}
	for _, h := range held {
		if !claimed[h.Value] && !seen[h.Value] {
			seen[h.Value] = true
			p.Claim = append(p.Claim, h)
		}
	}
	return p
}

// Upstream's repair loop interval; the grace period a claim may wait for
// its Service.
const (
	RepairInterval = 3 * time.Minute
	RepairGrace    = time.Minute
)

// Repairer reconciles the claims with the Services that exist.
type Repairer struct {
	Services *Services
	// List returns every Service.
	List  func(ctx context.Context) ([]corev1.Service, error)
	Clock clock.WithTicker
}

// Run repairs now and every RepairInterval until ctx ends.
func (r *Repairer) Run(ctx context.Context) {
	t := r.Clock.NewTicker(RepairInterval)
	defer t.Stop()
	for {
		if err := r.Repair(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("service allocations not repaired", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Repair runs one pass over cluster IPs and node ports.
func (r *Repairer) Repair(ctx context.Context) error {
	ipClaims, err := r.Services.IPs.Claims(ctx)
	if err != nil {
		return err
	}
	portClaims, err := r.Services.Ports.Claims(ctx)
	if err != nil {
		return err
	}
	svcs, err := r.List(ctx)
	if err != nil {
		return err
	}
	var ips, ports []Holding
	for i := range svcs {
		s := &svcs[i]
		h, owner := HeldBy(s), OwnerOf(s)
		for _, ip := range h.IPs {
			ips = append(ips, Holding{Value: ip, Owner: owner})
		}
		for _, p := range h.Ports {
			ports = append(ports, Holding{Value: p, Owner: owner})
		}
	}
	now := r.Clock.Now()
	r.apply(ctx, "cluster IP", r.Services.IPs, Decide(ipClaims, ips, now, RepairGrace))
	r.apply(ctx, "node port", r.Services.Ports, Decide(portClaims, ports, now, RepairGrace))
	return nil
}

func (r *Repairer) apply(ctx context.Context, what string, a *Allocator, p Plan) {
	for _, c := range p.Release {
		slog.Info("freeing a leaked "+what, "value", c.Value, "claimedBy", c.Name)
		if err := a.release(ctx, c); err != nil {
			slog.Warn("leaked "+what+" not freed", "value", c.Value, "err", err)
		}
	}
	for _, h := range p.Claim {
		if !a.InRange(h.Value) {
			slog.Warn("a service holds a "+what+" outside the configured range", "value", h.Value, "service", h.Owner.Name)
			continue
		}
		if _, err := a.Allocate(ctx, h.Value, h.Owner, false); err != nil {
			// Another service holds it too: upstream reports the same.
			slog.Warn(what+" held without a claim could not be claimed again", "value", h.Value, "service", h.Owner.Name, "err", err)
		}
	}
}
