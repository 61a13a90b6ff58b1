package proxy

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// endpoint is one address and port a service port can be forwarded to.
type endpoint struct {
	ip          netip.Addr
	port        int32
	local       bool
	ready       bool
	serving     bool
	terminating bool
}

func (e endpoint) String() string {
	return netip.AddrPortFrom(e.ip, uint16(e.port)).String()
}

// servicePortEndpoints collects, over every IPv4 slice of a service, the
// endpoints of the port named like sp with its protocol. An address listed by
// two slices (as during a controller's rewrite) counts once.
func servicePortEndpoints(sp v1.ServicePort, svcSlices []*discoveryv1.EndpointSlice, nodeName string) []endpoint {
	seen := map[netip.AddrPort]bool{}
	var out []endpoint
	for _, s := range svcSlices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		port, ok := slicePort(s, sp)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			key := netip.AddrPortFrom(ip, uint16(port))
			if seen[key] {
				continue
			}
			seen[key] = true
			// Unset conditions mean "ready", serving follows ready and a
			// missing terminating means not terminating, as the API says.
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			serving := ready
			if ep.Conditions.Serving != nil {
				serving = *ep.Conditions.Serving
			}
			terminating := ep.Conditions.Terminating != nil && *ep.Conditions.Terminating
			out = append(out, endpoint{
				ip: ip, port: port,
				local:       ep.NodeName != nil && *ep.NodeName == nodeName,
				ready:       ready && !terminating,
				serving:     serving,
				terminating: terminating,
			})
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(a.ip.Compare(b.ip), cmp.Compare(a.port, b.port))
	})
	return out
}

func slicePort(s *discoveryv1.EndpointSlice, sp v1.ServicePort) (int32, bool) {
	for _, p := range s.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		proto := v1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == protocolOf(sp) && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

func protocolOf(sp v1.ServicePort) v1.Protocol {
	if sp.Protocol == "" {
		return v1.ProtocolTCP
	}
	return sp.Protocol
}

// categorized says which endpoints each traffic policy forwards to.
type categorized struct {
	cluster []endpoint // every ready endpoint, else the serving terminating ones
	local   []endpoint // the same choice among this node's endpoints
	any     bool       // some endpoint anywhere could serve
}

// categorize follows upstream's choice: ready endpoints first, and only when
// none is ready, the ones still serving while they terminate, so that a
// rolling update does not refuse connections in between.
func categorize(eps []endpoint) categorized {
	usable := func(local bool) []endpoint {
		var ready, fallback []endpoint
		for _, e := range eps {
			if local && !e.local {
				continue
			}
			switch {
			case e.ready:
				ready = append(ready, e)
			case e.serving && e.terminating:
				fallback = append(fallback, e)
			}
		}
		if len(ready) > 0 {
			return ready
		}
		return fallback
	}
	c := categorized{cluster: usable(false), local: usable(true)}
	c.any = len(c.cluster) > 0
	return c
}

// portKey is the text of a port number in an nftables element.
func portKey(p int32) string { return strconv.Itoa(int(p)) }
