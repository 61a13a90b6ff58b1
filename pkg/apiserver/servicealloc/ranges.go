// Package servicealloc hands out Services' cluster IPs and node ports, as
// upstream's allocators do, with the state in etcd: one key per claimed IP
// or port, claimed by creating it when absent (etcd's compare-and-swap), so
// that allocations survive restarts and two apiservers never hand out the
// same one. A repair loop reconciles the keys with the Services that exist.
package servicealloc

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Range is a numbered set of values (IPs or ports): offsets 0..Size()-1.
type Range interface {
	// Size is how many values the range holds.
	Size() int
	// Offset returns a value's offset, or false when it is not in the range.
	Offset(value string) (int, bool)
	// Value returns the value at an offset.
	Value(offset int) string
	// StaticBand is how many low offsets dynamic allocation leaves for
	// requested values until the rest is full.
	StaticBand() int
	// String names the range in errors, as upstream's ValidRange.
	String() string
}

// IPRange is an IPv4 service CIDR without its network and broadcast
// addresses, as upstream's bitmap allocator counts it.
type IPRange struct {
	prefix netip.Prefix
	first  uint32
	size   int
}

// ParseIPRange parses a --service-cluster-ip-range value.
func ParseIPRange(cidr string) (*IPRange, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("%q is not a CIDR: %w", cidr, err)
	}
	if !p.Addr().Is4() {
		return nil, fmt.Errorf("%q: only an IPv4 service range is supported", cidr)
	}
	p = p.Masked()
	hostBits := 32 - p.Bits()
	if hostBits < 2 || hostBits > 20 {
		return nil, fmt.Errorf("%q: the service range must hold between 2 and 2^20 addresses (a prefix from /12 to /30)", cidr)
	}
	base := binary.BigEndian.Uint32(p.Addr().AsSlice())
	return &IPRange{prefix: p, first: base + 1, size: 1<<hostBits - 2}, nil
}

// Size implements Range.
func (r *IPRange) Size() int { return r.size }

// Offset implements Range.
func (r *IPRange) Offset(value string) (int, bool) {
	a, err := netip.ParseAddr(value)
	if err != nil || !a.Is4() {
		return 0, false
	}
	n := binary.BigEndian.Uint32(a.AsSlice())
	if n < r.first || n >= r.first+uint32(r.size) {
		return 0, false
	}
	return int(n - r.first), true
}

// Value implements Range.
func (r *IPRange) Value(offset int) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], r.first+uint32(offset))
	return netip.AddrFrom4(b).String()
}

// First is the range's first address, the `kubernetes` Service's.
func (r *IPRange) First() string { return r.Value(0) }

// StaticBand implements Range: min(max(16, size/16), 256) addresses, as
// upstream, so that well-known addresses (10.96.0.10 for DNS) stay free.
func (r *IPRange) StaticBand() int {
	total := r.size + 2
	if total <= 16 {
		return 0
	}
	return min(max(16, total/16), 256)
}

// String implements Range.
func (r *IPRange) String() string { return r.prefix.String() }

// PortRange is a --service-node-port-range.
type PortRange struct{ pr utilnet.PortRange }

// ParsePortRange parses "30000-32767" (or upstream's "30000+2767").
func ParsePortRange(s string) (*PortRange, error) {
	pr, err := utilnet.ParsePortRange(s)
	if err != nil {
		return nil, err
	}
	return &PortRange{pr: *pr}, nil
}

// Size implements Range.
func (r *PortRange) Size() int { return r.pr.Size }

// Offset implements Range.
func (r *PortRange) Offset(value string) (int, bool) {
	p, err := strconv.Atoi(value)
	if err != nil || !r.pr.Contains(p) {
		return 0, false
	}
	return p - r.pr.Base, true
}

// Value implements Range.
func (r *PortRange) Value(offset int) string { return strconv.Itoa(r.pr.Base + offset) }

// StaticBand implements Range: as upstream, min(max(16, size/32), 128)
// ports.
func (r *PortRange) StaticBand() int {
	if r.pr.Size <= 16 {
		return 0
	}
	return min(max(16, r.pr.Size/32), 128)
}

// String implements Range.
func (r *PortRange) String() string { return r.pr.String() }
