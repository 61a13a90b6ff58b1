package cni

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
)

// Route is a host route: Dst (a podCIDR) via Gateway (that node's InternalIP).
type Route struct {
	Dst     string
	Gateway string
}

// RouteTable edits the host's routing table.
type RouteTable interface {
	Replace(ctx context.Context, r Route) error
	Delete(ctx context.Context, r Route) error
}

// IPRoute edits routes with iproute2.
type IPRoute struct{}

func (IPRoute) Replace(ctx context.Context, r Route) error {
	return runIP(ctx, "route", "replace", r.Dst, "via", r.Gateway)
}

func (IPRoute) Delete(ctx context.Context, r Route) error {
	return runIP(ctx, "route", "del", r.Dst, "via", r.Gateway)
}

func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Routes keeps the routes to other nodes' podCIDRs in step with the nodes.
type Routes struct {
	Table   RouteTable
	current map[string]Route
}

// Node is what routing needs to know of a Node.
type Node struct {
	Name       string
	PodCIDR    string
	InternalIP string
}

// Sync adds a route for every other node with a podCIDR and an address,
// and removes routes to nodes that went away.
func (r *Routes) Sync(ctx context.Context, self string, nodes []Node) error {
	if r.current == nil {
		r.current = map[string]Route{}
	}
	// A node sharing this node's address (two kubelets on one host) is
	// reached through the local bridge already; a route via ourselves would
	// shadow it.
	selfIP := ""
	for _, n := range nodes {
		if n.Name == self {
			selfIP = n.InternalIP
		}
	}
	want := map[string]Route{}
	for _, n := range nodes {
		if n.Name == self || n.PodCIDR == "" || net.ParseIP(n.InternalIP) == nil || n.InternalIP == selfIP {
			continue
		}
		if _, _, err := net.ParseCIDR(n.PodCIDR); err != nil {
			continue
		}
		want[n.Name] = Route{Dst: n.PodCIDR, Gateway: n.InternalIP}
	}
	var firstErr error
	for name, rt := range want {
		if cur, ok := r.current[name]; ok && cur == rt {
			continue
		}
		if err := r.Table.Replace(ctx, rt); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		r.current[name] = rt
	}
	for name, rt := range r.current {
		if _, ok := want[name]; !ok {
			if err := r.Table.Delete(ctx, rt); err != nil && firstErr == nil {
				firstErr = err
			}
			delete(r.current, name)
		}
	}
	return firstErr
}
