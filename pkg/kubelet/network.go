package kubelet

import (
	"context"
	"log/slog"

	v1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/cni"
)

// CNINetwork is the real Network: a conflist for containerd's CRI plugin
// and iproute2 routes to the other nodes.
type CNINetwork struct {
	BinDir, ConfDir, DataDir string
	// Bridge is the host bridge pods attach to (default cni0); nodes
	// sharing a host need their own.
	Bridge string
	// NonMasqueradeCIDR is the pod network: traffic from pods to anywhere
	// else is masqueraded. Empty leaves masquerading off.
	NonMasqueradeCIDR string
	Routes            cni.Routes
	self              string
}

// NewCNINetwork returns a network for node self.
func NewCNINetwork(self, binDir, confDir, dataDir string) *CNINetwork {
	return &CNINetwork{BinDir: binDir, ConfDir: confDir, DataDir: dataDir, Routes: cni.Routes{Table: cni.IPRoute{}}, self: self}
}

func (n *CNINetwork) EnsureConfig(ctx context.Context, podCIDR string) error {
	path, err := cni.Write(ctx, cni.Config{PodCIDR: podCIDR, DataDir: n.DataDir, Bridge: n.Bridge}, n.BinDir, n.ConfDir)
	if err != nil {
		return err
	}
	slog.Info("wrote CNI config", "path", path, "podCIDR", podCIDR)
	if n.NonMasqueradeCIDR != "" {
		return cni.EnsureMasquerade(ctx, podCIDR, n.NonMasqueradeCIDR)
	}
	return nil
}

func (n *CNINetwork) SyncRoutes(ctx context.Context, nodes []*v1.Node) error {
	var list []cni.Node
	for _, node := range nodes {
		cn := cni.Node{Name: node.Name, PodCIDR: node.Spec.PodCIDR}
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				cn.InternalIP = a.Address
				break
			}
		}
		list = append(list, cn)
	}
	return n.Routes.Sync(ctx, n.self, list)
}

// ensureNetwork configures the pod network for podCIDR; pods wait until it worked.
func (kl *Kubelet) ensureNetwork(ctx context.Context, podCIDR string) {
	err := kl.network.EnsureConfig(ctx, podCIDR)
	kl.mu.Lock()
	defer kl.mu.Unlock()
	if err != nil {
		slog.Error("configure pod network", "podCIDR", podCIDR, "err", err)
		kl.netReady, kl.netErr = false, "network plugin not ready: "+err.Error()
		return
	}
	kl.podCIDR = podCIDR
	kl.netReady, kl.netErr = true, ""
	// The Node turns Ready now; say so without waiting for the next tick.
	kl.kickNodeStatus()
}

func (kl *Kubelet) networkReady() (bool, string) {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	if kl.podCIDR == "" {
		return false, "network not ready: node has no podCIDR"
	}
	if !kl.netReady && kl.netErr == "" {
		return false, "network plugin not ready: the CNI config for " + kl.podCIDR + " is not written yet"
	}
	return kl.netReady, kl.netErr
}

// nodesChanged picks up this node's podCIDR and routes to the others'.
func (kl *Kubelet) nodesChanged() {
	kl.mu.Lock()
	ctx := kl.runCtx
	kl.mu.Unlock()
	if ctx == nil {
		return
	}
	var nodes []*v1.Node
	for _, obj := range kl.nodeLister.List() {
		if n, ok := obj.(*v1.Node); ok {
			nodes = append(nodes, n)
			if n.Name == kl.cfg.NodeName {
				kl.adoptPodCIDR(ctx, n)
			}
		}
	}
	if err := kl.network.SyncRoutes(ctx, nodes); err != nil {
		slog.Warn("sync routes to other nodes", "err", err)
	}
}

// HostNetwork is a Network for runtimes that bring their own pod network
// (and for in-process integration tests with a fake runtime): it writes no
// CNI config and adds no routes.
type HostNetwork struct{}

func (HostNetwork) EnsureConfig(context.Context, string) error   { return nil }
func (HostNetwork) SyncRoutes(context.Context, []*v1.Node) error { return nil }
