package proxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// SetupNode prepares the host for the table's rules: the service range's
// routes, forwarding, and bridged pod traffic through the IP hooks (without
// it, a reply between two pods on one bridge skips the un-DNAT and the
// client sees it come from the pod rather than the Service).
func SetupNode(ctx context.Context, serviceCIDR netip.Prefix) error {
	for path, value := range map[string]string{
		"/proc/sys/net/ipv4/ip_forward":                "1",
		"/proc/sys/net/bridge/bridge-nf-call-iptables": "1",
	} {
		// No bridge support loaded: no bridged pod traffic to see. A read-only
		// /proc/sys (a container) may still hold the right value.
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if cur, _ := os.ReadFile(path); strings.TrimSpace(string(cur)) != value {
				slog.Warn("cannot set sysctl; Services may not work", "path", path, "want", value, "err", err)
			}
		}
	}
	return runIP(ctx, serviceRouteCommands(serviceCIDR), func(args []string) bool { return args[1] == "del" })
}

// localServiceTable is the routing table the host's own connections to the
// service range use (see serviceRouteCommands).
const localServiceTable = 1096

// Priority of the policy rule sending the host's own connections there;
// below the main table's 32766.
const localServiceRulePriority = 1096

// serviceRouteCommands returns the ip(8) commands that keep every packet for
// the service range on this node. A forwarded packet (from a pod) meets the
// main table's unreachable route after nat-prerouting rewrote those with
// rules, so an address without rules fails at once with "no route to host".
// The host's own connections look their route up before nat-output runs, so
// the unreachable route would refuse them all: a policy rule sends them to
// a table routing the range to loopback, nat-output rewrites those with
// rules, and filter-output rejects what is left (cluster-ips-check).
func serviceRouteCommands(cidr netip.Prefix) [][]string {
	table := strconv.Itoa(localServiceTable)
	return [][]string{
		{"route", "replace", "unreachable", cidr.String()},
		{"route", "replace", cidr.String(), "dev", "lo", "table", table},
		// "ip rule add" would add a duplicate on every start. The rule is
		// deleted by its whole selector: another cluster's proxy on this
		// host keeps its own rule for its own range.
		localRule("del", cidr),
		localRule("add", cidr),
	}
}

// serviceRouteCleanup undoes serviceRouteCommands; each may already be gone.
func serviceRouteCleanup(cidr netip.Prefix) [][]string {
	return [][]string{
		localRule("del", cidr),
		{"route", "del", cidr.String(), "dev", "lo", "table", strconv.Itoa(localServiceTable)},
		{"route", "del", "unreachable", cidr.String()},
	}
}

// localRule is the ip(8) command that adds or deletes the policy rule for
// the host's own connections to cidr.
func localRule(op string, cidr netip.Prefix) []string {
	return []string{"rule", op, "priority", strconv.Itoa(localServiceRulePriority), "to", cidr.String(),
		"iif", "lo", "lookup", strconv.Itoa(localServiceTable)}
}

// runIP runs ip(8) with each argument list; with tolerate, failures (an
// absent rule or route) are ignored.
func runIP(ctx context.Context, cmds [][]string, tolerate func(args []string) bool) error {
	for _, args := range cmds {
		out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
		if err != nil && !tolerate(args) {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
