package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// ip runs the ip command; its output is part of the error.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// addNetns makes a network namespace with its loopback up.
func addNetns(ctx context.Context, name string) error {
	if err := ip(ctx, "netns", "add", name); err != nil {
		return err
	}
	return ip(ctx, "-n", name, "link", "set", "lo", "up")
}

// delNetns removes a namespace; its interfaces (and the veth peers in other
// namespaces) and its nftables rules go with it once no process is left in
// it, which is why the processes are stopped first.
func delNetns(name string) {
	_ = ip(context.Background(), "netns", "del", name)
}

// linkNetns joins two namespaces with a veth pair, addr1 (a CIDR) in ns1 on
// dev1 and addr2 in ns2 on dev2. A dummy interface would do for the node
// address alone, but not every kernel here has the dummy module, and the
// proxy needs a path to the apiserver anyway.
func linkNetns(ctx context.Context, ns1, dev1, addr1, ns2, dev2, addr2 string) error {
	for _, args := range [][]string{
		{"-n", ns1, "link", "add", dev1, "type", "veth", "peer", "name", dev2, "netns", ns2},
		{"-n", ns1, "addr", "add", addr1, "dev", dev1},
		{"-n", ns2, "addr", "add", addr2, "dev", dev2},
		{"-n", ns1, "link", "set", dev1, "up"},
		{"-n", ns2, "link", "set", dev2, "up"},
	} {
		if err := ip(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// netnsDialer dials from inside the named namespace, so that this process
// reaches what listens on a namespace's loopback without any address on
// the host. The socket belongs to the namespace it was made in; the thread
// that switched namespace is never unlocked, so Go ends it instead of
// reusing it for other goroutines.
func netnsDialer(name string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type dialed struct {
			conn net.Conn
			err  error
		}
		ch := make(chan dialed, 1)
		go func() {
			runtime.LockOSThread()
			f, err := os.Open("/run/netns/" + name)
			if err != nil {
				ch <- dialed{err: err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- dialed{err: fmt.Errorf("enter netns %s: %w", name, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			ch <- dialed{c, err}
		}()
		r := <-ch
		return r.conn, r.err
	}
}

// nftRuleset is the namespace's whole ruleset as nft prints it.
func nftRuleset(ctx context.Context, ns string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "nft", "list", "ruleset").Output()
	if err != nil {
		return "", fmt.Errorf("nft list ruleset in %s: %w", ns, err)
	}
	return string(out), nil
}

var ipv4RE = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)

// addressesIn is the set of IPv4 addresses written in text.
func addressesIn(text string) map[string]bool {
	set := map[string]bool{}
	for _, a := range ipv4RE.FindAllString(text, -1) {
		set[a] = true
	}
	return set
}

// countPresent is how many of want the text names.
func countPresent(text string, want []string) int {
	set := addressesIn(text)
	n := 0
	for _, a := range want {
		if set[a] {
			n++
		}
	}
	return n
}
