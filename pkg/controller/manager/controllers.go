package manager

import (
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/controller/deployment"
	"github.com/kube-lite/kube-lite/pkg/controller/disruption"
	"github.com/kube-lite/kube-lite/pkg/controller/endpoint"
	"github.com/kube-lite/kube-lite/pkg/controller/endpointslice"
	"github.com/kube-lite/kube-lite/pkg/controller/garbagecollector"
	"github.com/kube-lite/kube-lite/pkg/controller/job"
	"github.com/kube-lite/kube-lite/pkg/controller/namespace"
	"github.com/kube-lite/kube-lite/pkg/controller/nodeipam"
	"github.com/kube-lite/kube-lite/pkg/controller/nodelifecycle"
	"github.com/kube-lite/kube-lite/pkg/controller/podgc"
	"github.com/kube-lite/kube-lite/pkg/controller/replicaset"
	"github.com/kube-lite/kube-lite/pkg/controller/rootcacertpublisher"
	"github.com/kube-lite/kube-lite/pkg/controller/ttlafterfinished"
)

func initializers() map[string]initFunc {
	return map[string]initFunc{
		"deployment":             startDeployment,
		"replicaset":             startReplicaSet,
		"job":                    startJob,
		"garbagecollector":       startGarbageCollector,
		"nodelifecycle":          startNodeLifecycle,
		"nodeipam":               startNodeIPAM,
		"namespace":              startNamespace,
		"podgc":                  startPodGC,
		"ttlafterfinished":       startTTLAfterFinished,
		"disruption":             startDisruption,
		"endpoint":               startEndpoint,
		"endpointslice":          startEndpointSlice,
		rootcacertpublisher.Name: startRootCACertPublisher,
	}
}

func startDeployment(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := deployment.New(cc.client, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cc.metrics, cc.clock)
	c.Events = cc.recorder("deployment-controller")
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentDeploymentSyncs) }, nil
}

func startReplicaSet(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := replicaset.New(cc.client, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cc.metrics, cc.clock)
	c.Events = cc.recorder("replicaset-controller")
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentReplicaSetSyncs) }, nil
}

func startGarbageCollector(_ context.Context, cc *controllerContext) (runFunc, error) {
	dyn, err := dynamic.NewForConfig(cc.config)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, mapper, err := cc.restMapper()
	if err != nil {
		return nil, err
	}
	c := garbagecollector.New(dyn, disc, mapper, mapper.Reset, cc.metrics)
	c.Events = cc.recorder("garbage-collector-controller")
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentGCSyncs) }, nil
}

func startNamespace(_ context.Context, cc *controllerContext) (runFunc, error) {
	dyn, err := dynamic.NewForConfig(cc.config)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cc.config)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	c := namespace.New(cc.client, dyn, disc, cc.informers.Core().V1().Namespaces(), cc.metrics)
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentNamespaceSyncs) }, nil
}

func startNodeIPAM(_ context.Context, cc *controllerContext) (runFunc, error) {
	if !cc.opts.AllocateNodeCIDRs {
		return nil, nil
	}
	c, err := nodeipam.New(cc.client, cc.informers.Core().V1().Nodes(), cc.opts.ClusterCIDR, cc.opts.NodeCIDRMaskSize, cc.metrics)
	if err != nil {
		return nil, err
	}
	return c.Run, nil
}

func startNodeLifecycle(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := nodelifecycle.New(cc.client, f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods(),
		nodelifecycle.Config{GracePeriod: cc.opts.NodeMonitorGracePeriod, MonitorPeriod: cc.opts.NodeMonitorPeriod}, cc.metrics, cc.clock)
	c.Events = cc.recorder("node-controller")
	c.EvictionEvents = cc.recorder("taint-eviction-controller")
	return func(ctx context.Context) { c.Run(ctx, 2) }, nil
}

func startJob(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := job.New(cc.client, f.Batch().V1().Jobs(), f.Core().V1().Pods(), cc.metrics, cc.clock)
	c.Events = cc.recorder("job-controller")
	c.PodFailureBackoff = cc.opts.JobPodFailureBackoff
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentJobSyncs) }, nil
}

func startPodGC(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := podgc.New(cc.client, f.Core().V1().Pods(), f.Core().V1().Nodes(),
		podgc.Config{TerminatedThreshold: cc.opts.TerminatedPodGCThreshold, Quarantine: 40 * time.Second, Period: 20 * time.Second}, cc.clock)
	return c.Run, nil
}

func startTTLAfterFinished(_ context.Context, cc *controllerContext) (runFunc, error) {
	c := ttlafterfinished.New(cc.client, cc.informers.Batch().V1().Jobs(), cc.metrics, cc.clock)
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentTTLSyncs) }, nil
}

func startDisruption(_ context.Context, cc *controllerContext) (runFunc, error) {
	dyn, err := dynamic.NewForConfig(cc.config)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, mapper, err := cc.restMapper()
	if err != nil {
		return nil, err
	}
	f := cc.informers
	c := disruption.New(cc.client, f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods(),
		f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(),
		disruption.Scales{Mapper: mapper, Client: dyn, Discovery: disc}, cc.metrics, cc.clock)
	c.Events = cc.recorder("controllermanager")
	return func(ctx context.Context) { c.Run(ctx, 1) }, nil
}

func startEndpoint(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := endpoint.New(cc.client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints(), cc.metrics)
	c.Events = cc.recorder(endpoint.ControllerName)
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentEndpointSyncs) }, nil
}

func startEndpointSlice(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := endpointslice.New(cc.client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Nodes(),
		f.Discovery().V1().EndpointSlices(), cc.opts.MaxEndpointsPerSlice, cc.metrics)
	c.Events = cc.recorder("endpoint-slice-controller")
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentServiceEndpointSyncs) }, nil
}

func startRootCACertPublisher(_ context.Context, cc *controllerContext) (runFunc, error) {
	ca, err := rootCA(cc.opts.RootCAFile, cc.config)
	if err != nil {
		return nil, err
	}
	f := cc.informers
	p := rootcacertpublisher.New(cc.client, f.Core().V1().ConfigMaps(), f.Core().V1().Namespaces(), ca, cc.metrics)
	return func(ctx context.Context) { p.Run(ctx, 1) }, nil
}

// rootCA is the bundle the root CA publisher hands out: --root-ca-file, or
// else the CA this process verifies the apiserver with, as upstream.
func rootCA(file string, cfg *rest.Config) ([]byte, error) {
	if file == "" {
		if len(cfg.TLSClientConfig.CAData) > 0 {
			return cfg.TLSClientConfig.CAData, nil
		}
		file = cfg.TLSClientConfig.CAFile
		if file == "" {
			return nil, fmt.Errorf("no --root-ca-file and no CA in the kubeconfig: nothing to publish as %s", rootcacertpublisher.ConfigMapName)
		}
	}
	ca, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("root CA: %w", err)
	}
	if block, _ := pem.Decode(ca); block == nil {
		return nil, fmt.Errorf("root CA %s: no PEM data", file)
	}
	return ca, nil
}
