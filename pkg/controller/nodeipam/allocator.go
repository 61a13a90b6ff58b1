package nodeipam

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
)

// cidrSet splits a cluster CIDR into equal subnets and names them by index.
type cidrSet struct {
	cluster  *net.IPNet
	maskSize int
	count    int
}

func newCIDRSet(cluster *net.IPNet, maskSize int) (*cidrSet, error) {
	ones, bits := cluster.Mask.Size()
	if maskSize < ones || maskSize > bits {
		return nil, fmt.Errorf("node mask /%d does not fit in %s", maskSize, cluster)
	}
	if maskSize-ones > 30 {
		return nil, fmt.Errorf("%s split into /%d gives too many subnets", cluster, maskSize)
	}
	return &cidrSet{cluster: cluster, maskSize: maskSize, count: 1 << (maskSize - ones)}, nil
}

// subnet returns the i-th subnet.
func (s *cidrSet) subnet(i int) *net.IPNet {
	_, bits := s.cluster.Mask.Size()
	base := new(big.Int).SetBytes(s.cluster.IP.To16())
	if s.cluster.IP.To4() != nil {
		base = new(big.Int).SetBytes(s.cluster.IP.To4())
	}
	off := new(big.Int).Lsh(big.NewInt(int64(i)), uint(bits-s.maskSize))
	ip := new(big.Int).Add(base, off).Bytes()
	n := bits / 8
	buf := make([]byte, n)
	copy(buf[n-len(ip):], ip)
	return &net.IPNet{IP: net.IP(buf), Mask: net.CIDRMask(s.maskSize, bits)}
}

// index is the inverse of subnet; false for a CIDR that is not one of ours.
func (s *cidrSet) index(cidr string) (int, bool) {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil || !s.cluster.Contains(ip) {
		return 0, false
	}
	if ones, _ := n.Mask.Size(); ones != s.maskSize {
		return 0, false
	}
	_, bits := s.cluster.Mask.Size()
	if ip4 := n.IP.To4(); ip4 != nil && bits == 32 {
		base := binary.BigEndian.Uint32(s.cluster.IP.To4())
		return int((binary.BigEndian.Uint32(ip4) - base) >> (32 - s.maskSize)), true
	}
	base := new(big.Int).SetBytes(s.cluster.IP.To16())
	v := new(big.Int).SetBytes(n.IP.To16())
	v.Sub(v, base).Rsh(v, uint(bits-s.maskSize))
	return int(v.Int64()), true
}
