// Package nodeipam gives every Node a podCIDR out of --cluster-cidr.
package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "nodeipam"

// Controller allocates podCIDRs. It derives the used set from the Node
// cache on every allocation, so a restart, or a deleted Node, needs no
// bookkeeping: a CIDR is free exactly when no Node carries it.
type Controller struct {
	client kubernetes.Interface
	lister corelisters.NodeLister
	synced cache.InformerSynced
	queue  controllerutil.Queue
	set    *cidrSet

	// pending holds CIDRs written but not yet seen in the cache, so two
	// Nodes never get the same one in that window.
	mu      sync.Mutex
	pending map[string]string // node name -> cidr
}

// New returns an allocator for clusterCIDR split into /maskSize subnets.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, clusterCIDR string, maskSize int, mp workqueue.MetricsProvider) (*Controller, error) {
	_, cluster, err := net.ParseCIDR(clusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR %q: %w", clusterCIDR, err)
	}
	set, err := newCIDRSet(cluster, maskSize)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client:  client,
		lister:  nodes.Lister(),
		synced:  nodes.Informer().HasSynced,
		queue:   controllerutil.NewQueue(Name, mp),
		set:     set,
		pending: map[string]string{},
	}
	_, _ = nodes.Informer().AddEventHandler(controllerutil.EnqueueHandler(c.queue))
	return c, nil
}

// Run allocates until ctx ends. One worker: allocations must be serial.
func (c *Controller) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, 1, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.pending, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.PodCIDR != "" {
		c.mu.Lock()
		delete(c.pending, name)
		c.mu.Unlock()
		return nil
	}
	cidr, err := c.allocate(name)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr, "podCIDRs": []string{cidr}}})
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.mu.Lock()
		delete(c.pending, name)
		c.mu.Unlock()
		return fmt.Errorf("set podCIDR of node %s: %w", name, err)
	}
	slog.Info("allocated podCIDR", "node", name, "podCIDR", cidr)
	return nil
}

func (c *Controller) allocate(name string) (string, error) {
	nodes, err := c.lister.List(labels.Everything())
	if err != nil {
		return "", err
	}
	used := map[int]bool{}
	for _, n := range nodes {
		for _, cidr := range nodeCIDRs(n) {
			if i, ok := c.set.index(cidr); ok {
				used[i] = true
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cidr, ok := c.pending[name]; ok {
		return cidr, nil
	}
	for _, cidr := range c.pending {
		if i, ok := c.set.index(cidr); ok {
			used[i] = true
		}
	}
	for i := 0; i < c.set.count; i++ {
		if !used[i] {
			cidr := c.set.subnet(i).String()
			c.pending[name] = cidr
			return cidr, nil
		}
	}
	return "", fmt.Errorf("no podCIDR left in %s for node %s", c.set.cluster, name)
}

func nodeCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}
