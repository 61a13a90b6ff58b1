package cni

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// MasqueradeComment marks the node's masquerade rule, so that teardown
// scripts find it.
const MasqueradeComment = "kube-lite masquerade"

// EnsureMasquerade keeps one NAT rule for the node: traffic from the pod
// range to anywhere outside nonMasquerade (the cluster's pod network) leaves
// with the node's address. One rule per node replaces the bridge plugin's
// per-pod ipMasq chains, whose iptables calls, serialized by the xtables
// lock, dominated sandbox setup when many pods start at once.
func EnsureMasquerade(ctx context.Context, podCIDR, nonMasquerade string) error {
	rule := []string{"POSTROUTING", "-s", podCIDR, "!", "-d", nonMasquerade,
		"-m", "comment", "--comment", MasqueradeComment, "-j", "MASQUERADE"}
	if err := iptables(ctx, append([]string{"-t", "nat", "-C"}, rule...)...); err == nil {
		return nil
	}
	if err := iptables(ctx, append([]string{"-t", "nat", "-A"}, rule...)...); err != nil {
		return fmt.Errorf("add the pod masquerade rule: %w", err)
	}
	return nil
}

func iptables(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
