package servicealloc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Store is the compare-and-swap the claims live behind: one key per
// claimed value.
type Store interface {
	// Create stores value under key unless the key exists, and reports
	// whether it did.
	Create(ctx context.Context, key string, value []byte) (bool, error)
	// Get returns the value under key; false when there is none.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// List returns the value of every key under prefix, by key without the
	// prefix.
	List(ctx context.Context, prefix string) (map[string][]byte, error)
	// DeleteIf removes key while its value is still value.
	DeleteIf(ctx context.Context, key string, value []byte) error
}

// Owner is the Service that holds a claim.
type Owner struct {
	// Name is namespace/name, for people reading etcd and logs.
	Name string    `json:"owner"`
	UID  types.UID `json:"uid"`
}

// Claim is one claimed value.
type Claim struct {
	Value string `json:"-"`
	Owner
	Claimed time.Time `json:"claimed"`
}

// Errors as upstream's allocators word them.
var (
	ErrFull         = errors.New("range is full")
	errIPAllocated  = errors.New("provided IP is already allocated")
	errPortAllocate = errors.New("provided port is already allocated")
)

// Allocator claims the values of one Range under one key prefix.
type Allocator struct {
	store  Store
	prefix string
	rng    Range
	clock  clock.PassiveClock
	// allocated and notInRange word the refusals of a requested value.
	allocated  error
	notInRange func(value string) error
	// dryRunChecksTaken: a dry run refuses a requested value that is
	// taken (upstream's node ports; its IPs check only the range).
	dryRunChecksTaken bool
	// randN returns a number in [0,n).
	randN func(n int) int
}

// NewIPAllocator hands out the IPs of r, claimed under prefix in s.
func NewIPAllocator(s Store, prefix string, r *IPRange, c clock.PassiveClock) *Allocator {
	return &Allocator{store: s, prefix: prefix, rng: r, clock: c, allocated: errIPAllocated, randN: rand.IntN,
		notInRange: func(v string) error {
			return fmt.Errorf("the provided IP (%v) is not in the valid range. The range of valid IPs is %s", v, r)
		}}
}

// NewPortAllocator hands out the ports of r, claimed under prefix in s.
func NewPortAllocator(s Store, prefix string, r *PortRange, c clock.PassiveClock) *Allocator {
	return &Allocator{store: s, prefix: prefix, rng: r, clock: c, allocated: errPortAllocate, randN: rand.IntN, dryRunChecksTaken: true,
		notInRange: func(string) error {
			return fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", r)
		}}
}

// Allocate claims a requested value for owner. It reports whether it
// claimed it now (false when owner held it already, or with dryRun, which
// claims nothing: as upstream's dry-run allocators, it checks the range,
// and for node ports whether the port is taken too).
func (a *Allocator) Allocate(ctx context.Context, value string, owner Owner, dryRun bool) (bool, error) {
	if _, ok := a.rng.Offset(value); !ok {
		return false, refusal{a.notInRange(value)}
	}
	if dryRun && !a.dryRunChecksTaken {
		return false, nil
	}
	for {
		if !dryRun {
			ok, err := a.store.Create(ctx, a.prefix+value, a.encode(owner))
			if err != nil || ok {
				return ok, err
			}
		}
		// Taken: by this owner already (the repair loop may have
		// re-claimed it), or by another; or freed since.
		c, found, err := a.get(ctx, value)
		switch {
		case err != nil:
			return false, err
		case !found && dryRun:
			return false, nil
		case !found:
			continue
		case c.UID == owner.UID:
			return false, nil
		}
		return false, refusal{a.allocated}
	}
}

// refusal is a requested value the range cannot give: the client's error,
// not the store's.
type refusal struct{ error }

func isRefusal(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// randomTries is how many random values AllocateNext claims blindly before
// it lists what is taken: in a sparse range the first one nearly always
// succeeds, at one write.
const randomTries = 3

// AllocateNext claims a random free value for owner, preferring values
// above the static band, as upstream. With dryRun it picks one without
// claiming it.
func (a *Allocator) AllocateNext(ctx context.Context, owner Owner, dryRun bool) (string, error) {
	size, band := a.rng.Size(), a.rng.StaticBand()
	if dryRun {
		for range randomTries {
			if band >= size {
				break
			}
			v := a.rng.Value(band + a.randN(size-band))
			if _, found, err := a.store.Get(ctx, a.prefix+v); err != nil {
				return "", err
			} else if !found {
				return v, nil
			}
		}
		taken, err := a.store.List(ctx, a.prefix)
		if err != nil {
			return "", err
		}
		if v, ok := pickFree(a.rng, taken, a.randN); ok {
			return v, nil
		}
		return "", ErrFull
	}
	for range randomTries {
		if band >= size {
			break
		}
		v := a.rng.Value(band + a.randN(size-band))
		ok, err := a.store.Create(ctx, a.prefix+v, a.encode(owner))
		if err != nil {
			return "", err
		}
		if ok {
			return v, nil
		}
	}
	// Crowded: pick among what a list shows free, again when another
	// apiserver takes the pick first.
	for {
		taken, err := a.store.List(ctx, a.prefix)
		if err != nil {
			return "", err
		}
		v, ok := pickFree(a.rng, taken, a.randN)
		if !ok {
			return "", ErrFull
		}
		claimed, err := a.store.Create(ctx, a.prefix+v, a.encode(owner))
		if err != nil {
			return "", err
		}
		if claimed {
			return v, nil
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
}

// pickFree picks a random value not in taken, above the static band when
// one is free there.
func pickFree(r Range, taken map[string][]byte, randN func(int) int) (string, bool) {
	size, band := r.Size(), r.StaticBand()
	var dynamic, static []int
	for off := range size {
		if _, ok := taken[r.Value(off)]; ok {
			continue
		}
		if off >= band {
			dynamic = append(dynamic, off)
		} else {
			static = append(static, off)
		}
	}
	switch {
	case len(dynamic) > 0:
		return r.Value(dynamic[randN(len(dynamic))]), true
	case len(static) > 0:
		return r.Value(static[randN(len(static))]), true
	}
	return "", false
}

// Release frees value if owner holds it.
func (a *Allocator) Release(ctx context.Context, value string, owner Owner) error {
	raw, found, err := a.store.Get(ctx, a.prefix+value)
	if err != nil || !found {
		return err
	}
	var c Claim
	if json.Unmarshal(raw, &c) == nil && c.UID != owner.UID {
		return nil
	}
	return a.store.DeleteIf(ctx, a.prefix+value, raw)
}

// release frees a claim exactly as listed (the repair loop's leaks).
func (a *Allocator) release(ctx context.Context, c Claim) error {
	raw, found, err := a.store.Get(ctx, a.prefix+c.Value)
	if err != nil || !found {
		return err
	}
	cur, err := decodeClaim(c.Value, raw)
	if err != nil || cur.UID != c.UID || !cur.Claimed.Equal(c.Claimed) {
		return nil // unreadable, or claimed again since: leave it
	}
	return a.store.DeleteIf(ctx, a.prefix+c.Value, raw)
}

// Claims lists every claim.
func (a *Allocator) Claims(ctx context.Context) ([]Claim, error) {
	m, err := a.store.List(ctx, a.prefix)
	if err != nil {
		return nil, err
	}
	out := make([]Claim, 0, len(m))
	for v, raw := range m {
		c, err := decodeClaim(v, raw)
		if err != nil {
			// An unreadable claim is a leak like any other.
			c = Claim{Value: v}
		}
		out = append(out, c)
	}
	return out, nil
}

// InRange reports whether value belongs to the allocator's range.
func (a *Allocator) InRange(value string) bool {
	_, ok := a.rng.Offset(value)
	return ok
}

func (a *Allocator) get(ctx context.Context, value string) (Claim, bool, error) {
	raw, found, err := a.store.Get(ctx, a.prefix+value)
	if err != nil || !found {
		return Claim{}, false, err
	}
	// An unreadable claim is someone else's.
	c, _ := decodeClaim(value, raw)
	return c, true, nil
}

func (a *Allocator) encode(owner Owner) []byte {
	b, _ := json.Marshal(Claim{Owner: owner, Claimed: a.clock.Now().UTC()})
	return b
}

func decodeClaim(value string, raw []byte) (Claim, error) {
	var c Claim
	if err := json.Unmarshal(raw, &c); err != nil {
		return Claim{}, fmt.Errorf("claim of %s: %w", value, err)
	}
	c.Value = value
	return c, nil
}
