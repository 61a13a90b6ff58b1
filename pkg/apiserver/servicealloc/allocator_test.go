package servicealloc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// memStore is an in-memory Store with etcd's create-if-absent semantics.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) Create(_ context.Context, key string, value []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return false, nil
	}
	s.m[key] = value
	return true, nil
}

func (s *memStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

func (s *memStore) List(_ context.Context, prefix string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.m {
		if strings.HasPrefix(k, prefix) {
			out[strings.TrimPrefix(k, prefix)] = v
		}
	}
	return out, nil
}

func (s *memStore) DeleteIf(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Equal(s.m[key], value) {
		delete(s.m, key)
	}
	return nil
}

var now = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func ipAllocator(t *testing.T, s Store, cidr string) *Allocator {
	t.Helper()
	r, err := ParseIPRange(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return NewIPAllocator(s, "/ips/", r, clocktesting.NewFakePassiveClock(now))
}

func owner(n int) Owner {
	return Owner{Name: fmt.Sprintf("default/s%d", n), UID: types.UID(fmt.Sprint("uid-", n))}
}

func TestAllocateRequested(t *testing.T) {
	ctx := context.Background()
	a := ipAllocator(t, newMemStore(), "10.96.0.0/16")
	tests := []struct {
		name    string
		ip      string
		owner   Owner
		claimed bool
		err     string
	}{
		{"free", "10.96.0.10", owner(1), true, ""},
		{"taken", "10.96.0.10", owner(2), false, "provided IP is already allocated"},
		{"held by the same owner", "10.96.0.10", owner(1), false, ""},
		{"network address", "10.96.0.0", owner(2), false, "the provided IP (10.96.0.0) is not in the valid range. The range of valid IPs is 10.96.0.0/16"},
		{"broadcast", "10.96.255.255", owner(2), false, "the provided IP (10.96.255.255) is not in the valid range. The range of valid IPs is 10.96.0.0/16"},
		{"outside", "10.97.0.1", owner(2), false, "the provided IP (10.97.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/16"},
		{"last", "10.96.255.254", owner(2), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claimed, err := a.Allocate(ctx, tt.ip, tt.owner, false)
			if fmt.Sprint(err) != fmt.Sprint(nilIfEmpty(tt.err)) || claimed != tt.claimed {
				t.Errorf("Allocate(%s) = %v, %v; want %v, %q", tt.ip, claimed, err, tt.claimed, tt.err)
			}
		})
	}
}

func nilIfEmpty(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}

func TestDryRunClaimsNothing(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	a := ipAllocator(t, s, "10.96.0.0/16")
	if _, err := a.Allocate(ctx, "10.96.0.10", owner(1), true); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocateNext(ctx, owner(1), true); err != nil {
		t.Fatal(err)
	}
	if len(s.m) != 0 {
		t.Errorf("a dry run claimed %v", s.m)
	}
}

func TestAllocateNextFillsTheRangeThenIsFull(t *testing.T) {
	ctx := context.Background()
	a := ipAllocator(t, newMemStore(), "10.96.0.0/28") // 14 addresses
	seen := map[string]bool{}
	for i := range 14 {
		ip, err := a.AllocateNext(ctx, owner(i), false)
		if err != nil {
			t.Fatalf("address %d: %v", i, err)
		}
		if seen[ip] || !a.InRange(ip) {
			t.Fatalf("address %d: %s again or outside the range", i, ip)
		}
		seen[ip] = true
	}
	if _, err := a.AllocateNext(ctx, owner(99), false); err != ErrFull {
		t.Errorf("a full range: %v, want %v", err, ErrFull)
	}
	if err := a.Release(ctx, "10.96.0.5", owner(0)); err != nil {
		t.Fatal(err)
	}
	claims, _ := a.Claims(ctx)
	if len(claims) != 14 {
		t.Errorf("a release by a non-owner freed the address: %d claims", len(claims))
	}
}

func TestAllocateNextPrefersTheUpperBand(t *testing.T) {
	ctx := context.Background()
	a := ipAllocator(t, newMemStore(), "10.96.0.0/16")
	for i := range 50 {
		ip, err := a.AllocateNext(ctx, owner(i), false)
		if err != nil {
			t.Fatal(err)
		}
		if off, _ := a.rng.Offset(ip); off < 256 {
			t.Errorf("dynamic address %s in the static band (offset %d)", ip, off)
		}
	}
}

// TestTwoAllocatorsNeverShare: two allocators (two apiservers) on one
// store fill a range at once without handing out an address twice.
func TestTwoAllocatorsNeverShare(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	as := []*Allocator{ipAllocator(t, s, "10.96.0.0/26"), ipAllocator(t, s, "10.96.0.0/26")} // 62 addresses
	got := make([]string, 62)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			ip, err := as[i%2].AllocateNext(ctx, owner(i), false)
			if err != nil {
				t.Errorf("allocation %d: %v", i, err)
			}
			got[i] = ip
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for i, ip := range got {
		if j, dup := seen[ip]; dup {
			t.Errorf("allocations %d and %d both got %s", j, i, ip)
		}
		seen[ip] = i
	}
}

func TestPortAllocator(t *testing.T) {
	ctx := context.Background()
	r, err := ParsePortRange("30000-30002")
	if err != nil {
		t.Fatal(err)
	}
	a := NewPortAllocator(newMemStore(), "/ports/", r, clocktesting.NewFakePassiveClock(now))
	if _, err := a.Allocate(ctx, "30001", owner(1), false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate(ctx, "30001", owner(2), false); fmt.Sprint(err) != "provided port is already allocated" {
		t.Errorf("taken port: %v", err)
	}
	if _, err := a.Allocate(ctx, "8080", owner(2), false); fmt.Sprint(err) != "provided port is not in the valid range. The range of valid ports is 30000-30002" {
		t.Errorf("port outside: %v", err)
	}
	// A dry run checks whether a node port is taken, as upstream's.
	if _, err := a.Allocate(ctx, "30001", owner(2), true); fmt.Sprint(err) != "provided port is already allocated" {
		t.Errorf("dry run of a taken port: %v", err)
	}
	if claimed, err := a.Allocate(ctx, "30002", owner(2), true); err != nil || claimed {
		t.Errorf("dry run of a free port: %v, %v", claimed, err)
	}
	for i := range 2 {
		if _, err := a.AllocateNext(ctx, owner(10+i), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.AllocateNext(ctx, owner(20), false); err != ErrFull {
		t.Errorf("full: %v", err)
	}
}

func TestParseIPRange(t *testing.T) {
	for _, bad := range []string{"10.96.0.0", "fd00::/108", "10.0.0.0/8", "10.96.0.0/31"} {
		if _, err := ParseIPRange(bad); err == nil {
			t.Errorf("ParseIPRange(%q) accepted it", bad)
		}
	}
	r, err := ParseIPRange("10.96.0.0/16")
	if err != nil || r.First() != "10.96.0.1" || r.Size() != 65534 || r.StaticBand() != 256 {
		t.Errorf("10.96.0.0/16: first %s size %d band %d (%v)", r.First(), r.Size(), r.StaticBand(), err)
	}
}
