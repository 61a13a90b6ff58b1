//go:build e2e

// Package proxy checks kube-lite-proxy's rules in a real kernel: network
// namespaces play a node with a bridge and pods on it, the rules rendered
// for a few Services are written with the real nft into the node's
// namespace, and clients connect as users of the Services would. Nothing
// outside the namespaces the test creates is touched.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"

	"github.com/kube-lite/kube-lite/pkg/proxy"
)

const (
	nodeName    = "node-1"
	gatewayIP   = "10.244.0.1"
	clientIP    = "10.244.0.10"
	serviceCIDR = "10.96.0.0/16"
)

// pods are the endpoints: name → address.
var pods = []struct{ name, ip string }{
	{"pod1", "10.244.0.2"},
	{"pod2", "10.244.0.3"},
	{"pod3", "10.244.0.4"},
}

// netnsName is unique to this run, so that two runs never share one.
func netnsName(role string) string { return fmt.Sprintf("klpx%d-%s", os.Getpid()%100000, role) }

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// inNetns runs fn on an OS thread inside the named namespace; sockets fn
// opens and programs it starts belong to that namespace. The thread is never
// handed back to other goroutines.
func inNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + name)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// topology creates the node namespace with bridge, the pods and the client,
// each pod answering on 8080 with its name and the address it saw.
func topology(t *testing.T) {
	node := netnsName("node")
	run(t, "ip", "netns", "add", node)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", node).Run() })
	run(t, "ip", "-n", node, "link", "set", "lo", "up")
	run(t, "ip", "-n", node, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", node, "addr", "add", gatewayIP+"/24", "dev", "br0")
	run(t, "ip", "-n", node, "link", "set", "br0", "up")

	attach := func(role, ip string) {
		ns := netnsName(role)
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		host := fmt.Sprintf("klpx%d%s", os.Getpid()%10000, role[len(role)-1:])
		run(t, "ip", "link", "add", host, "netns", node, "type", "veth", "peer", "name", "eth0", "netns", ns)
		// As the kubelet's CNI config (hairpinMode): a pod's packet to its
		// own Service leaves by the port it came in.
		run(t, "ip", "-n", node, "link", "set", host, "master", "br0", "up")
		run(t, "ip", "-n", node, "link", "set", host, "type", "bridge_slave", "hairpin", "on")
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
		run(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
		run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", ns, "route", "add", "default", "via", gatewayIP)
	}
	for _, p := range pods {
		attach(p.name, p.ip)
		name := p.name
		var ln net.Listener
		if err := inNetns(netnsName(name), func() (err error) {
			ln, err = net.Listen("tcp", ":8080")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "%s %s\n", name, c.RemoteAddr().(*net.TCPAddr).IP)
				c.Close()
			}
		}()
	}
	attach("client", clientIP)
}

func service(name, ip string, nodePort int32, affinity bool) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: name},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: ip,
			Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: nodePort}}},
	}
	if nodePort != 0 {
		svc.Spec.Type = v1.ServiceTypeNodePort
		svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	if affinity {
		svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		svc.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}
	}
	return svc
}

func slice(svc string, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "e2e", Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(nodeName),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// program writes the rules for st into the node namespace, as one sync of
// the proxy does: only what changed since prev, or, with prev nil, the
// whole table.
func program(t *testing.T, st proxy.State, prev *proxy.Ruleset) *proxy.Ruleset {
	t.Helper()
	var rs *proxy.Ruleset
	cfg := proxy.Config{NodeName: nodeName, ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
		ServiceCIDR: netip.MustParsePrefix(serviceCIDR)}
	err := inNetns(netnsName("node"), func() error {
		ctx := context.Background()
		if err := proxy.SetupNode(ctx, cfg.ServiceCIDR); err != nil {
			return err
		}
		nft, err := knftables.New(knftables.IPv4Family, proxy.TableName)
		if err != nil {
			return err
		}
		rs = proxy.Render(cfg, st)
		tx := nft.NewTransaction()
		if prev == nil || !rs.Update(tx, prev) {
			existing, err := nft.ListAll(ctx)
			if err != nil && !knftables.IsNotFound(err) {
				return err
			}
			tx = nft.NewTransaction()
			rs.Transaction(tx, existing)
		}
		return nft.Run(ctx, tx)
	})
	if err != nil {
		t.Fatalf("programming the node: %v", err)
	}
	return rs
}

// get connects from the namespace of role to addr and returns the answering
// pod's name and the client address it saw.
func get(role, addr string) (name, seen string, err error) {
	err = inNetns(netnsName(role), func() error {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			return err
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			return fmt.Errorf("answer %q", b)
		}
		name, seen = f[0], f[1]
		return nil
	})
	return name, seen, err
}

func TestServicesInKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and nftables rules")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s (apt-get install iproute2 nftables)", bin)
		}
	}
	topology(t)
	st := proxy.State{
		Services: []*v1.Service{
			service("web", "10.96.0.20", 30080, false),
			service("empty", "10.96.0.21", 0, false),
			service("sticky", "10.96.0.22", 0, true),
			service("self", "10.96.0.23", 0, false),
			service("self-sticky", "10.96.0.24", 0, true),
		},
		Slices: []*discoveryv1.EndpointSlice{
			slice("web", pods[0].ip, pods[1].ip, pods[2].ip),
			slice("empty"),
			slice("sticky", pods[0].ip, pods[1].ip, pods[2].ip),
			slice("self", pods[0].ip),
			slice("self-sticky", pods[0].ip),
		},
	}
	initial := program(t, st, nil)

	spread := func(t *testing.T, role, addr string) {
		seen := map[string]int{}
		// Each of 3 endpoints is missed by 60 random picks with
		// probability (2/3)^60, about 3e-11.
		for range 60 {
			name, _, err := get(role, addr)
			if err != nil {
				t.Fatalf("connect to %s: %v", addr, err)
			}
			seen[name]++
		}
		if len(seen) != len(pods) {
			t.Errorf("answers from %s spread over %v, want all of %d pods", addr, seen, len(pods))
		}
	}
	t.Run("cluster IP spreads over every endpoint", func(t *testing.T) { spread(t, "client", "10.96.0.20:80") })
	t.Run("the node itself reaches a cluster IP", func(t *testing.T) { spread(t, "node", "10.96.0.20:80") })
	t.Run("NodePort on the node address", func(t *testing.T) { spread(t, "client", gatewayIP+":30080") })

	t.Run("no endpoints refuses the connection", func(t *testing.T) {
		for _, role := range []string{"client", "node"} {
			if _, _, err := get(role, "10.96.0.21:80"); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("from %s: got %v, want connection refused", role, err)
			}
		}
	})
	t.Run("an address or port without a Service is refused on the node", func(t *testing.T) {
		for _, c := range []struct{ role, addr string }{
			{"client", "10.96.0.99:80"}, {"node", "10.96.0.99:80"}, {"client", "10.96.0.20:81"}, {"node", "10.96.0.20:81"},
		} {
			if _, _, err := get(c.role, c.addr); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s from %s: got %v, want connection refused", c.addr, c.role, err)
			}
		}
	})

	t.Run("ClientIP affinity sticks, across a sync too", func(t *testing.T) {
		first, _, err := get("client", "10.96.0.22:80")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if i == 10 {
				program(t, st, nil) // a full resync must not forget the client
			}
			name, _, err := get("client", "10.96.0.22:80")
			if err != nil {
				t.Fatal(err)
			}
			if name != first {
				t.Fatalf("connection %d went to %s, want %s as the first", i+2, name, first)
			}
		}
	})

	t.Run("hairpin: a pod reaches itself through its Service", func(t *testing.T) {
		// Without affinity the DNAT is one numgen map; with it, a chain
		// per endpoint: both must masquerade.
		for _, addr := range []string{"10.96.0.23:80", "10.96.0.24:80"} {
			name, seen, err := get("pod1", addr)
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			if name != "pod1" || seen == pods[0].ip {
				t.Errorf("%s: answer from %s seeing client %s; want pod1 seeing a masqueraded address, not its own", addr, name, seen)
			}
		}
	})

	t.Run("endpoints gone: the next sync refuses", func(t *testing.T) {
		changed := proxy.State{Services: st.Services[:1], Slices: []*discoveryv1.EndpointSlice{slice("web")}}
		// A sync writing only the changed Services, from the first state.
		program(t, changed, initial)
		if _, _, err := get("client", "10.96.0.20:80"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("got %v, want connection refused", err)
		}
		if _, _, err := get("client", "10.96.0.22:80"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("a Service removed from the state: got %v, want connection refused", err)
		}
	})

	t.Run("without the table the route still keeps Service addresses on the node", func(t *testing.T) {
		run(t, "ip", "netns", "exec", netnsName("node"), "nft", "delete", "table", "ip", proxy.TableName)
		if _, _, err := get("client", "10.96.0.20:80"); !errors.Is(err, syscall.EHOSTUNREACH) {
			t.Errorf("got %v, want no route to host", err)
		}
	})

	t.Run("cleanup removes the table and the routes", func(t *testing.T) {
		program(t, st, nil)
		if err := inNetns(netnsName("node"), func() error {
			return proxy.Cleanup(context.Background(), proxy.TableName, netip.MustParsePrefix(serviceCIDR))
		}); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"nft", "list", "ruleset"},
			{"ip", "route", "show", "table", "all", "10.96.0.0/16"},
			{"ip", "rule", "show", "priority", "1096"},
		} {
			out, err := exec.Command("ip", append([]string{"netns", "exec", netnsName("node")}, args...)...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("after cleanup, %s: %v %q, want nothing", strings.Join(args, " "), err, out)
			}
		}
	})
}
