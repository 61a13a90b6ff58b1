package apiserver

import (
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/configmap"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/deployment"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/job"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/lease"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/pod"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/replicaset"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/secret"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/serviceaccount"
)

// Resources lists every resource the server serves, in discovery order.
func Resources(c clock.PassiveClock) []*registry.Resource {
	return []*registry.Resource{
		pod.Resource(c),
		configmap.Resource(c),
		secret.Resource(c),
		serviceaccount.Resource(c),
		deployment.Resource(c),
		replicaset.Resource(c),
		job.Resource(c),
		lease.Resource(c),
	}
}
