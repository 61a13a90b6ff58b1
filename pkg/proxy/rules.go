package proxy

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"
)

// TableName is the one nftables table (family ip) that kube-lite-proxy owns.
const TableName = "kube-lite"

// Names of the table's fixed chains, sets and maps.
const (
	servicesChain          = "services"
	masqueradingChain      = "masquerading"
	markMasqChain          = "mark-for-masquerade"
	rejectChain            = "reject-chain"
	endpointsCheckChain    = "endpoints-check"
	nodePortsCheckChain    = "nodeport-endpoints-check"
	clusterIPsCheckChain   = "cluster-ips-check"
	clusterIPsSet          = "cluster-ips"
	nodePortIPsSet         = "nodeport-ips"
	serviceIPsMap          = "service-ips"
	serviceNodePortsMap    = "service-nodeports"
	noEndpointServicesMap  = "no-endpoint-services"
	noEndpointNodePortsMap = "no-endpoint-nodeports"
	hairpinSet             = "hairpin-connections"
	affinitySetPrefix      = "affinity-"

	// masqueradeMark flags a packet in the nat chains so that postrouting
	// masquerades it once its output interface is known.
	masqueradeMark = "0x4000"
	noLocalhost    = "ip daddr != 127.0.0.0/8"
)

// Config is what the node tells the rule rendering about itself.
type Config struct {
	NodeName string
	// ClusterCIDR holds every pod address; traffic to a Service from
	// outside it is masqueraded so that replies come back through this node.
	// Invalid (unset): no such masquerade.
	ClusterCIDR netip.Prefix
	// ServiceCIDR: a new connection to an address or port in it that no
	// Service rewrote is refused. Invalid (unset): no such reject.
	ServiceCIDR netip.Prefix
	// NodePortCIDRs restrict NodePorts to the node's addresses inside them;
	// empty means every local address but loopback, as upstream.
	NodePortCIDRs []netip.Prefix
}

// State is what the cluster and the host currently hold.
type State struct {
	Services []*v1.Service
	Slices   []*discoveryv1.EndpointSlice
	// NodeIPs are the host's addresses; used only with Config.NodePortCIDRs.
	NodeIPs []netip.Addr
}

// Ruleset is the whole desired content of the table, rendered by Render and
// written by Transaction or Update.
type Ruleset struct {
	base *fragment
	// services holds each Service's objects by namespace/name, so that a
	// sync rewrites only the Services that changed.
	services map[string]*fragment
	order    []string
	cur      *fragment
	// affinity names the ClientIP affinity sets; they survive a sync that
	// still wants them, so that clients stay on their endpoint.
	affinity map[string]bool
	// hairpin counts the Services holding each element of the hairpin set
	// (a pod may back two Services on the same port): a partial sync
	// deletes an element only when no Service wants it any more.
	hairpin map[string]int
}

// fragment is a part of the table written and replaced as a whole.
type fragment struct {
	chains   []*knftables.Chain
	sets     []*knftables.Set
	maps     []*knftables.Map
	rules    []*knftables.Rule
	elements []*knftables.Element
	sum      [sha256.Size]byte // of everything above, to tell whether it changed
}

func (f *fragment) seal() {
	b := sha256.New()
	for _, c := range f.chains {
		fmt.Fprintf(b, "chain %s\n", c.Name)
	}
	for _, s := range f.sets {
		fmt.Fprintf(b, "set %s %v\n", s.Name, s.Timeout)
	}
	for _, m := range f.maps {
		fmt.Fprintf(b, "map %s\n", m.Name)
	}
	for _, r := range f.rules {
		fmt.Fprintf(b, "rule %s %s\n", r.Chain, r.Rule)
	}
	for _, e := range f.elements {
		fmt.Fprintf(b, "element %s%s %v %v\n", e.Set, e.Map, e.Key, e.Value)
	}
	b.Sum(f.sum[:0])
}

func (r *Ruleset) fragments() []*fragment {
	out := []*fragment{r.base}
	for _, k := range r.order {
		out = append(out, r.services[k])
	}
	return out
}

func (r *Ruleset) chain(name string) {
	r.cur.chains = append(r.cur.chains, &knftables.Chain{Name: name})
}

func (r *Ruleset) rule(chain string, parts ...any) {
	r.cur.rules = append(r.cur.rules, &knftables.Rule{Chain: chain, Rule: knftables.Concat(parts...)})
}

func (r *Ruleset) element(set, mapName string, key []string, value ...string) {
	e := &knftables.Element{Set: set, Map: mapName, Key: key}
	if len(value) > 0 {
		e.Value = value
	}
	r.cur.elements = append(r.cur.elements, e)
}

// Render decides the table's whole content from the Services and
// EndpointSlices. It does no I/O.
func Render(cfg Config, st State) *Ruleset {
	r := &Ruleset{base: &fragment{}, services: map[string]*fragment{}, affinity: map[string]bool{}, hairpin: map[string]int{}}
	r.cur = r.base
	r.writeBase(cfg, st.NodeIPs)
	r.base.seal()

	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range st.Slices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			continue
		}
		key := s.Namespace + "/" + name
		bySvc[key] = append(bySvc[key], s)
	}
	svcs := slices.Clone(st.Services)
	slices.SortFunc(svcs, func(a, b *v1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, svc := range svcs {
		cip, ok := proxiedClusterIP(svc)
		if !ok {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		r.cur = &fragment{}
		r.element(clusterIPsSet, "", []string{cip.String()})
		for _, sp := range svc.Spec.Ports {
			r.servicePort(cfg, svc, cip, sp, servicePortEndpoints(sp, bySvc[key], cfg.NodeName))
		}
		r.cur.seal()
		r.services[key] = r.cur
		r.order = append(r.order, key)
	}
	r.cur = nil
	return r
}

// proxiedClusterIP is the IPv4 cluster IP of a Service that gets rules:
// headless and ExternalName Services get none (DNS answers for them).
func proxiedClusterIP(svc *v1.Service) (netip.Addr, bool) {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !ip.Is4() {
		return netip.Addr{}, false
	}
	return ip, true
}

// base is the skeleton every sync writes: hooks, dispatch maps and the
// helpers the per-service chains jump to.
func (r *Ruleset) writeBase(cfg Config, nodeIPs []netip.Addr) {
	type baseChain struct {
		name     string
		kind     knftables.BaseChainType
		hook     knftables.BaseChainHook
		priority knftables.BaseChainPriority
	}
	// Numeric priorities: nft 1.0.6 refuses "dstnat" on the output hook.
	for _, bc := range []baseChain{
		// After nat-prerouting's DNAT: what is still addressed to a Service
		// found no endpoint.
		{"filter-prerouting", knftables.FilterType, knftables.PreroutingHook, "-90"},
		{"filter-input", knftables.FilterType, knftables.InputHook, "0"},
		{"filter-output", knftables.FilterType, knftables.OutputHook, "0"},
		{"nat-prerouting", knftables.NATType, knftables.PreroutingHook, "-100"},
		{"nat-output", knftables.NATType, knftables.OutputHook, "-100"},
		{"nat-postrouting", knftables.NATType, knftables.PostroutingHook, "100"},
	} {
		r.cur.chains = append(r.cur.chains, &knftables.Chain{Name: bc.name, Type: &bc.kind, Hook: &bc.hook, Priority: &bc.priority})
	}
	for _, c := range []string{servicesChain, masqueradingChain, markMasqChain, rejectChain, endpointsCheckChain, nodePortsCheckChain, clusterIPsCheckChain} {
		r.chain(c)
	}
	// Rejects run in filter chains (nat chains cannot reject), for new
	// connections only. A pod's packet is rejected in prerouting: after it,
	// the service range's unreachable route would answer "no route to host"
	// instead of "connection refused".
	r.rule("filter-prerouting", "ct state new", "jump", endpointsCheckChain)
	r.rule("filter-prerouting", "ct state new", "jump", clusterIPsCheckChain)
	r.rule("filter-input", "ct state new", "jump", nodePortsCheckChain)
	r.rule("filter-output", "ct state new", "jump", endpointsCheckChain)
	r.rule("filter-output", "ct state new", "jump", clusterIPsCheckChain)
	r.rule("nat-prerouting", "jump", servicesChain)
	r.rule("nat-output", "jump", servicesChain)
	r.rule("nat-postrouting", "jump", masqueradingChain)

	r.rule(markMasqChain, "mark", "set", "mark", "or", masqueradeMark)
	r.rule(masqueradingChain, "mark", "and", masqueradeMark, "!=", "0", "mark", "set", "mark", "xor", masqueradeMark, "masquerade fully-random")
	// Hairpin: a pod reaching itself through its Service must see the reply
	// come from the Service, not from itself. One set of this node's
	// endpoints, as upstream, instead of a mark in a chain per endpoint.
	r.rule(masqueradingChain, "ct status dnat ip saddr . ip daddr . meta l4proto . th dport", "@", hairpinSet, "masquerade fully-random")
	// An ICMP error for the host's own connection, routed through
	// loopback, does not reach its socket; a TCP reset does.
	r.rule(rejectChain, "meta l4proto tcp reject with tcp reset")
	r.rule(rejectChain, "reject")

	const ipPortProto = "ipv4_addr . inet_proto . inet_service : verdict"
	r.cur.sets = append(r.cur.sets,
		&knftables.Set{Name: clusterIPsSet, Type: "ipv4_addr", Comment: knftables.PtrTo("cluster IPs with rules")},
		&knftables.Set{Name: hairpinSet, Type: "ipv4_addr . ipv4_addr . inet_proto . inet_service", Comment: knftables.PtrTo("this node's endpoints, to masquerade a pod reaching itself")},
	)
	r.cur.maps = append(r.cur.maps,
		&knftables.Map{Name: serviceIPsMap, Type: ipPortProto, Comment: knftables.PtrTo("cluster IP traffic")},
		&knftables.Map{Name: serviceNodePortsMap, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("NodePort traffic")},
		&knftables.Map{Name: noEndpointServicesMap, Type: ipPortProto, Comment: knftables.PtrTo("cluster IPs without endpoints: reject or drop")},
		&knftables.Map{Name: noEndpointNodePortsMap, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("NodePorts without endpoints: reject or drop")},
	)

	if cfg.ClusterCIDR.IsValid() {
		// Traffic from off the cluster (the host, another machine) may be
		// forwarded to another node; its replies must come back here.
		r.rule(servicesChain, "ip daddr", "@", clusterIPsSet, "ip saddr !=", cfg.ClusterCIDR, "jump", markMasqChain)
	}
	r.rule(servicesChain, "ip daddr . meta l4proto . th dport vmap", "@", serviceIPsMap)
	r.rule(endpointsCheckChain, "ip daddr . meta l4proto . th dport vmap", "@", noEndpointServicesMap)
	if len(cfg.NodePortCIDRs) == 0 {
		// Upstream's nftables mode serves no NodePort on localhost.
		r.rule(servicesChain, "fib daddr type local", noLocalhost, "meta l4proto . th dport vmap", "@", serviceNodePortsMap)
		r.rule(nodePortsCheckChain, noLocalhost, "meta l4proto . th dport vmap", "@", noEndpointNodePortsMap)
	} else {
		r.cur.sets = append(r.cur.sets, &knftables.Set{Name: nodePortIPsSet, Type: "ipv4_addr", Comment: knftables.PtrTo("addresses serving NodePorts")})
		for _, ip := range nodeIPs {
			if !ip.Is4() || ip.IsLoopback() || !slices.ContainsFunc(cfg.NodePortCIDRs, func(p netip.Prefix) bool { return p.Contains(ip) }) {
				continue
			}
			r.element(nodePortIPsSet, "", []string{ip.String()})
		}
		r.rule(servicesChain, "ip daddr", "@", nodePortIPsSet, "meta l4proto . th dport vmap", "@", serviceNodePortsMap)
		r.rule(nodePortsCheckChain, "ip daddr", "@", nodePortIPsSet, "meta l4proto . th dport vmap", "@", noEndpointNodePortsMap)
	}
	if cfg.ServiceCIDR.IsValid() {
		// Reached after DNAT: anything still addressed to the service range
		// matched no Service. Refused at once, where the unreachable route
		// would answer with rate-limited ICMP (and the host's own connections
		// would wait for nothing).
		r.rule(clusterIPsCheckChain, "ip daddr", cfg.ServiceCIDR, "goto", rejectChain)
	}
}

// servicePort writes the dispatch, policy and endpoint chains of one port.
func (r *Ruleset) servicePort(cfg Config, svc *v1.Service, cip netip.Addr, sp v1.ServicePort, eps []endpoint) {
	proto := strings.ToLower(string(protocolOf(sp)))
	base := fmt.Sprintf("%s/%s/%s/%s", svc.Namespace, svc.Name, proto, sp.Name)
	clusterChain, localChain, externalChain := "service-"+base, "local-"+base, "external-"+base
	internalLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal
	external := sp.NodePort != 0
	externalLocal := external && svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal

	c := categorize(eps)
	// The cluster chain also serves the external chain's short-circuits
	// for the host's and pods' own traffic under externalTrafficPolicy Local.
	usesCluster := len(c.cluster) > 0 && (!internalLocal || external)
	usesLocal := len(c.local) > 0 && (internalLocal || externalLocal)
	internalChain, internalEPs := clusterChain, c.cluster
	if internalLocal {
		internalChain, internalEPs = localChain, c.local
	}
	externalPolicyChain, externalEPs := clusterChain, c.cluster
	if externalLocal {
		externalPolicyChain, externalEPs = localChain, c.local
	}
	// No endpoint anywhere: reject at once. Endpoints elsewhere but none
	// here under a Local policy: drop, as upstream.
	noEndpoints := "goto " + rejectChain
	if c.any {
		noEndpoints = "drop"
	}

	svcKey := []string{cip.String(), proto, portKey(sp.Port)}
	if len(internalEPs) > 0 {
		r.element("", serviceIPsMap, svcKey, "goto "+internalChain)
	} else {
		r.element("", noEndpointServicesMap, svcKey, noEndpoints)
	}
	if external {
		npKey := []string{proto, portKey(sp.NodePort)}
		if c.any {
			r.element("", serviceNodePortsMap, npKey, "goto "+externalChain)
			r.externalChain(cfg, externalChain, externalLocal, usesCluster, clusterChain, externalPolicyChain, len(externalEPs) > 0)
		}
		if len(externalEPs) == 0 {
			r.element("", noEndpointNodePortsMap, npKey, noEndpoints)
		}
	}

	var timeout time.Duration
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		timeout = time.Duration(v1.DefaultClientIPServiceAffinitySeconds) * time.Second
		if cfg := svc.Spec.SessionAffinityConfig; cfg != nil && cfg.ClientIP != nil && cfg.ClientIP.TimeoutSeconds != nil {
			timeout = time.Duration(*cfg.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	var used []endpoint
	if usesCluster {
		used = append(used, c.cluster...)
	}
	if usesLocal {
		used = append(used, c.local...)
	}
	hairpins := map[endpoint]bool{}
	for _, e := range used {
		if e.local && !hairpins[e] {
			hairpins[e] = true
			key := []string{e.ip.String(), e.ip.String(), proto, portKey(e.port)}
			r.element(hairpinSet, "", key)
			r.hairpin[strings.Join(key, " . ")]++
		}
	}
	written := map[endpoint]bool{}
	if usesCluster {
		r.policyChain(clusterChain, base, proto, c.cluster, timeout, written)
	}
	if usesLocal {
		r.policyChain(localChain, base, proto, c.local, timeout, written)
	}
}

// externalChain handles NodePort traffic before its traffic policy applies.
func (r *Ruleset) externalChain(cfg Config, name string, local, hasCluster bool, clusterChain, policyChain string, hasEndpoints bool) {
	r.chain(name)
	if !local {
		// The endpoint may be on another node: replies must come back here.
		r.rule(name, "jump", markMasqChain)
	} else if hasCluster {
		// Pods and the host itself are not "external": upstream sends them to
		// any endpoint, as if through an outside load balancer.
		if cfg.ClusterCIDR.IsValid() {
			r.rule(name, "ip saddr", cfg.ClusterCIDR, "goto", clusterChain)
		}
		r.rule(name, "fib saddr type local", "jump", markMasqChain)
		r.rule(name, "fib saddr type local", "goto", clusterChain)
	}
	if hasEndpoints {
		r.rule(name, "goto", policyChain)
	}
}

// policyChain spreads new connections over eps at random. Without
// affinity that is one DNAT through a numgen map, as upstream: no chain per
// endpoint. With ClientIP affinity, as upstream too, each endpoint needs a
// chain that records the client in its set, and a client found in one of
// the sets goes back to that endpoint.
func (r *Ruleset) policyChain(name, base, proto string, eps []endpoint, timeout time.Duration, written map[endpoint]bool) {
	r.chain(name)
	if timeout == 0 {
		dests := make([]string, 0, len(eps))
		for i, e := range eps {
			dests = append(dests, fmt.Sprintf("%d : %s . %d", i, e.ip, e.port))
		}
		r.rule(name, "meta l4proto", proto, "dnat ip addr . port to numgen random mod", len(eps), "map {", strings.Join(dests, " , "), "}")
		return
	}
	// nft names take no ':', so an endpoint is ip/port in them. The
	// timeout is in the set's name: a changed timeout is a new set.
	epName := func(e endpoint) string { return fmt.Sprintf("%s__%s/%d", base, e.ip, e.port) }
	epChain := func(e endpoint) string { return "endpoint-" + epName(e) }
	affinitySet := func(e endpoint) string {
		return fmt.Sprintf("%s%s-%ds", affinitySetPrefix, epName(e), int(timeout.Seconds()))
	}
	for _, e := range eps {
		r.rule(name, "ip saddr", "@", affinitySet(e), "goto", epChain(e))
	}
	vmap := make([]string, 0, len(eps))
	for i, e := range eps {
		vmap = append(vmap, fmt.Sprintf("%d : goto %s", i, epChain(e)))
	}
	r.rule(name, "numgen random mod", len(eps), "vmap {", strings.Join(vmap, " , "), "}")

	for _, e := range eps {
		if written[e] {
			continue
		}
		written[e] = true
		ch := epChain(e)
		r.chain(ch)
		set := affinitySet(e)
		r.cur.sets = append(r.cur.sets, &knftables.Set{
			Name: set, Type: "ipv4_addr",
			// The kernel marks a set updated from the packet path dynamic;
			// asking for it up front keeps a repeated add identical.
			Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
			Timeout: &timeout,
		})
		r.affinity[set] = true
		r.rule(ch, "update", "@", set, "{ ip saddr }")
		r.rule(ch, "meta l4proto", proto, "dnat to", e.String())
	}
}

// Transaction replaces the table's content with r in tx, given the names of
// the objects the table holds now (knftables' ListAll shape; nil for none).
// Everything not wanted is removed and everything wanted is written again,
// in one transaction, so that the kernel never holds a half-written table;
// only the affinity sets still wanted are kept with their entries.
func (r *Ruleset) Transaction(tx *knftables.Transaction, existing map[string][]string) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("rules for kube-lite-proxy")})
	wanted := map[string]bool{}
	for _, f := range r.fragments() {
		for _, c := range f.chains {
			wanted[c.Name] = true
		}
	}
	// Rules first (they refer to sets, maps and chains), then the maps
	// (their verdicts refer to chains), then what nothing refers to any more.
	for _, name := range existing["chain"] {
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range existing["map"] {
		tx.Delete(&knftables.Map{Name: name})
	}
	for _, name := range existing["set"] {
		if !r.affinity[name] {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
	for _, name := range existing["chain"] {
		if !wanted[name] {
			tx.Delete(&knftables.Chain{Name: name})
		}
	}
	for _, f := range r.fragments() {
		f.add(tx)
	}
}

// add writes f's objects; chains that exist must have been flushed.
func (f *fragment) add(tx *knftables.Transaction) {
	for _, c := range f.chains {
		tx.Add(c)
	}
	for _, s := range f.sets {
		tx.Add(s)
	}
	for _, m := range f.maps {
		tx.Add(m)
	}
	for _, rule := range f.rules {
		tx.Add(rule)
	}
	for _, e := range f.elements {
		tx.Add(e)
	}
}

// Update writes in tx only what changed since prev, the Ruleset the table
// holds now: the Services whose objects differ are removed and written
// again, the others are left alone. It reports false, writing nothing,
// when the skeleton changed; then only Transaction can bring the table
// up to date.
func (r *Ruleset) Update(tx *knftables.Transaction, prev *Ruleset) bool {
	if r.base.sum != prev.base.sum {
		return false
	}
	var stale, fresh []*fragment
	for _, k := range prev.order {
		if f := r.services[k]; f == nil || f.sum != prev.services[k].sum {
			stale = append(stale, prev.services[k])
		}
	}
	for _, k := range r.order {
		if f := prev.services[k]; f == nil || f.sum != r.services[k].sum {
			fresh = append(fresh, r.services[k])
		}
	}
	wanted := map[string]bool{}
	for _, f := range fresh {
		for _, c := range f.chains {
			wanted[c.Name] = true
		}
	}
	// As in Transaction: first what refers to chains and sets (map
	// elements, rules), then the chains and sets no longer wanted.
	deleted := map[string]bool{}
	for _, f := range stale {
		for _, e := range f.elements {
			if e.Set == hairpinSet {
				// Shared between Services: deleted once, and only when
				// no Service wants it now.
				key := strings.Join(e.Key, " . ")
				if r.hairpin[key] > 0 || deleted[key] {
					continue
				}
				deleted[key] = true
			}
			tx.Delete(&knftables.Element{Set: e.Set, Map: e.Map, Key: e.Key})
		}
	}
	for _, f := range stale {
		for _, c := range f.chains {
			tx.Flush(&knftables.Chain{Name: c.Name})
		}
	}
	for _, f := range stale {
		for _, c := range f.chains {
			if !wanted[c.Name] {
				tx.Delete(&knftables.Chain{Name: c.Name})
			}
		}
		for _, s := range f.sets {
			if !r.affinity[s.Name] {
				tx.Delete(&knftables.Set{Name: s.Name})
			}
		}
	}
	for _, f := range fresh {
		f.add(tx)
	}
	return true
}
