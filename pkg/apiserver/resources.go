package apiserver

import (
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/clusterrole"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/clusterrolebinding"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/configmap"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/deployment"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/endpoints"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/endpointslice"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/event"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/job"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/lease"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/limitrange"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/mutatingwebhookconfiguration"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/namespace"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/node"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/pod"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/poddisruptionbudget"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/priorityclass"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/replicaset"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/resourcequota"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/role"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/rolebinding"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/secret"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/service"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/serviceaccount"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validatingwebhookconfiguration"
)

// Resources lists every resource the server serves, in discovery order.
func Resources(c clock.PassiveClock) []*registry.Resource {
	return []*registry.Resource{
		pod.Resource(c),
		namespace.Resource(c),
		node.Resource(c),
		event.Resource(c),
		configmap.Resource(c),
		secret.Resource(c),
		serviceaccount.Resource(c),
		service.Resource(c),
		endpoints.Resource(c),
		deployment.Resource(c),
		replicaset.Resource(c),
		job.Resource(c),
		resourcequota.Resource(c),
		limitrange.Resource(c),
		lease.Resource(c),
		role.Resource(c),
		rolebinding.Resource(c),
		clusterrole.Resource(c),
		clusterrolebinding.Resource(c),
		mutatingwebhookconfiguration.Resource(c),
		validatingwebhookconfiguration.Resource(c),
		priorityclass.Resource(c),
		poddisruptionbudget.Resource(c),
		endpointslice.Resource(c),
	}
}
