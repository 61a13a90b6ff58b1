// Package cni writes the node's CNI network configuration, which
// containerd's CRI plugin uses to give each pod sandbox an address from the
// node's podCIDR, and keeps host routes to the other nodes' podCIDRs.
package cni

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
)

// NetworkName is the name of kube-lite's pod network.
const NetworkName = "kube-lite"

// ConfFileName sorts first so containerd picks it over other files there.
const ConfFileName = "10-kube-lite.conflist"

// Config is what the conflist depends on.
type Config struct {
	PodCIDR string
	Bridge  string // default cni0
	// DataDir holds host-local's IP allocations: per kubelet, so two nodes
	// on one host never hand out each other's addresses.
	DataDir string
	MTU     int
}

// Render returns the conflist for cfg: bridge + host-local, then portmap for
// hostPorts. No loopback plugin: containerd's CRI brings up each sandbox's lo
// itself, and every plugin in the list is one more process per pod start and stop.
func Render(cfg Config) ([]byte, error) {
	_, ipnet, err := net.ParseCIDR(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", cfg.PodCIDR, err)
	}
	bridge := cfg.Bridge
	if bridge == "" {
		bridge = "cni0"
	}
	defaultRoute := "0.0.0.0/0"
	if ipnet.IP.To4() == nil {
		defaultRoute = "::/0"
	}
	ipam := map[string]any{
		"type":   "host-local",
		"ranges": [][]map[string]string{{{"subnet": ipnet.String()}}},
		"routes": []map[string]string{{"dst": defaultRoute}},
	}
	if cfg.DataDir != "" {
		ipam["dataDir"] = cfg.DataDir
	}
	br := map[string]any{
		"type":        "bridge",
		"bridge":      bridge,
		"isGateway":   true,
		"ipMasq":      false, // one node-wide rule instead: EnsureMasquerade
		"hairpinMode": true,
		"ipam":        ipam,
	}
	if cfg.MTU > 0 {
		br["mtu"] = cfg.MTU
	}
	list := map[string]any{
		"cniVersion": "1.0.0",
		"name":       NetworkName,
		"plugins": []any{
			br,
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode conflist: %w", err)
	}
	if _, err := libcni.ConfListFromBytes(data); err != nil {
		return nil, fmt.Errorf("rendered conflist does not parse: %w", err)
	}
	return data, nil
}

// Write renders cfg, checks with libcni that every plugin exists in binDir
// and supports the config version, and writes the file atomically into
// confDir, only if its content changed.
func Write(ctx context.Context, cfg Config, binDir, confDir string) (string, error) {
	data, err := Render(cfg)
	if err != nil {
		return "", err
	}
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return "", fmt.Errorf("parse conflist: %w", err)
	}
	cni := libcni.NewCNIConfig([]string{binDir}, nil)
	if _, err := cni.ValidateNetworkList(ctx, list); err != nil {
		return "", fmt.Errorf("validate conflist against plugins in %s: %w", binDir, err)
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", confDir, err)
	}
	path := filepath.Join(confDir, ConfFileName)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return path, nil
	}
	// A name without the .conflist extension, so containerd ignores it until the rename.
	tmp := filepath.Join(confDir, ".kube-lite.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return "", fmt.Errorf("write conflist: %w", err)
	}
	// containerd watches the dir: a rename means it never reads half a file.
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("install conflist: %w", err)
	}
	return path, nil
}
