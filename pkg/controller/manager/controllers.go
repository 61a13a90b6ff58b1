package manager

import (
	"context"

	"github.com/kube-lite/kube-lite/pkg/controller/deployment"
	"github.com/kube-lite/kube-lite/pkg/controller/replicaset"
)

func initializers() map[string]initFunc {
	return map[string]initFunc{
		"deployment":       startDeployment,
		"replicaset":       startReplicaSet,
		"job":              notYet,
		"garbagecollector": notYet,
		"nodelifecycle":    notYet,
		"nodeipam":         notYet,
		"namespace":        notYet,
	}
}

func notYet(context.Context, *controllerContext) (runFunc, error) { return nil, nil }

func startDeployment(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := deployment.New(cc.client, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cc.metrics, cc.clock)
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentDeploymentSyncs) }, nil
}

func startReplicaSet(_ context.Context, cc *controllerContext) (runFunc, error) {
	f := cc.informers
	c := replicaset.New(cc.client, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cc.metrics, cc.clock)
	return func(ctx context.Context) { c.Run(ctx, cc.opts.ConcurrentReplicaSetSyncs) }, nil
}
