package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

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

// monitor follows `nft monitor` in a namespace and notes when each address
// first appears in an added object (rule, element, chain name): the kernel
// announces a transaction's objects once it has committed them, so that is
// when the rules for the address are in place.
type monitor struct {
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	seen   map[string]time.Time
	notify chan struct{} // closed and replaced on every new address
}

func startMonitor(ns string) (*monitor, error) {
	m := &monitor{cmd: exec.Command("ip", "netns", "exec", ns, "nft", "monitor"),
		done: make(chan struct{}), seen: map[string]time.Time{}, notify: make(chan struct{})}
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("nft monitor: %w", err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "add ") {
				continue
			}
			now := time.Now()
			m.mu.Lock()
			added := false
			for _, a := range ipv4RE.FindAllString(line, -1) {
				if _, ok := m.seen[a]; !ok {
					m.seen[a], added = now, true
				}
			}
			if strings.Contains(line, probeTable) {
				m.seen[probeTable], added = now, true
			}
			if added {
				close(m.notify)
				m.notify = make(chan struct{})
			}
			m.mu.Unlock()
		}
		_ = m.cmd.Wait()
	}()
	return m, nil
}

// probeTable is a table the bench adds and removes in a namespace to learn
// that its monitor listens.
const probeTable = "kube-lite-bench-probe"

// ready returns once the monitor reports a change made after it started
// listening, which takes a moment after its start: the probe table is
// added and removed until it does.
func (m *monitor) ready(ctx context.Context, ns string) error {
	nft := func(args ...string) error {
		args = append([]string{"netns", "exec", ns, "nft"}, args...)
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("nft %s: %w: %s", strings.Join(args[3:], " "), err, out)
		}
		return nil
	}
	for range 50 {
		if err := nft("add", "table", "ip", probeTable); err != nil {
			return err
		}
		_, err := m.waitFor(ctx, probeTable, 200*time.Millisecond)
		if derr := nft("delete", "table", "ip", probeTable); derr != nil {
			return derr
		}
		if err == nil {
			return nil
		}
	}
	return errors.New("nft monitor did not report the probe table in 10s")
}

// waitFor returns when key was first seen added, waiting up to timeout.
func (m *monitor) waitFor(ctx context.Context, key string, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		m.mu.Lock()
		t, ok := m.seen[key]
		notify := m.notify
		m.mu.Unlock()
		if ok {
			return t, nil
		}
		select {
		case <-notify:
		case <-m.done:
			return time.Time{}, fmt.Errorf("nft monitor ended before %s was seen", key)
		case <-deadline:
			return time.Time{}, fmt.Errorf("%s not in the ruleset after %s", key, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (m *monitor) stop() {
	_ = m.cmd.Process.Kill()
	<-m.done
}
