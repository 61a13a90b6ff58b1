// Package manager is kube-lite-controller-manager: flags, the set of
// controllers, and running them on shared informers under leader election.
package manager

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kube-lite/kube-lite/pkg/component/leaderelect"
)

// Options are the controller manager's flags, named as upstream's.
type Options struct {
	Kubeconfig  string
	BindAddress string
	Controllers []string

	ClusterCIDR            string
	AllocateNodeCIDRs      bool
	NodeCIDRMaskSize       int
	NodeMonitorGracePeriod time.Duration
	NodeMonitorPeriod      time.Duration

	ConcurrentDeploymentSyncs int
	ConcurrentReplicaSetSyncs int
	ConcurrentJobSyncs        int
	ConcurrentGCSyncs         int
	ConcurrentNamespaceSyncs  int
	ConcurrentTTLSyncs        int

	ConcurrentEndpointSyncs        int
	ConcurrentServiceEndpointSyncs int
	MaxEndpointsPerSlice           int

	// RootCAFile is the CA bundle published as kube-root-ca.crt in every
	// namespace; empty means the CA the controller-manager trusts the
	// apiserver with (its kubeconfig's), as upstream.
	RootCAFile string

	TerminatedPodGCThreshold int

	// JobPodFailureBackoff is the Job controller's first delay before
	// replacing a failed pod. Not a flag (upstream has none); tests shorten it.
	JobPodFailureBackoff time.Duration

	LeaderElection leaderelect.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		BindAddress:                    "127.0.0.1:10257",
		Controllers:                    []string{"*"},
		NodeCIDRMaskSize:               24,
		NodeMonitorGracePeriod:         50 * time.Second,
		NodeMonitorPeriod:              5 * time.Second,
		ConcurrentDeploymentSyncs:      5,
		ConcurrentReplicaSetSyncs:      5,
		ConcurrentJobSyncs:             5,
		ConcurrentGCSyncs:              20,
		ConcurrentNamespaceSyncs:       10,
		ConcurrentTTLSyncs:             5,
		ConcurrentEndpointSyncs:        5,
		ConcurrentServiceEndpointSyncs: 5,
		MaxEndpointsPerSlice:           100,
		TerminatedPodGCThreshold:       12500,
		JobPodFailureBackoff:           10 * time.Second,
	}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig with the apiserver's address and credentials.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port to serve /livez, /readyz and /metrics on (plain HTTP).")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf(
		"Controllers to run: '*' for all, 'foo' to add one, '-foo' to remove one. Known: %s.", strings.Join(KnownControllers(), ", ")))
	fs.StringVar(&o.ClusterCIDR, "cluster-cidr", o.ClusterCIDR, "CIDR range of pod addresses, split into one podCIDR per Node (needs --allocate-node-cidrs).")
	fs.BoolVar(&o.AllocateNodeCIDRs, "allocate-node-cidrs", o.AllocateNodeCIDRs, "Give every Node a podCIDR from --cluster-cidr.")
	fs.IntVar(&o.NodeCIDRMaskSize, "node-cidr-mask-size", o.NodeCIDRMaskSize, "Prefix length of each Node's podCIDR.")
	fs.DurationVar(&o.NodeMonitorGracePeriod, "node-monitor-grace-period", o.NodeMonitorGracePeriod, "How long a Node's Lease may go unrenewed before the Node is marked unreachable.")
	fs.DurationVar(&o.NodeMonitorPeriod, "node-monitor-period", o.NodeMonitorPeriod, "How often Node health is checked.")
	fs.IntVar(&o.ConcurrentDeploymentSyncs, "concurrent-deployment-syncs", o.ConcurrentDeploymentSyncs, "Deployments synced at once.")
	fs.IntVar(&o.ConcurrentReplicaSetSyncs, "concurrent-replicaset-syncs", o.ConcurrentReplicaSetSyncs, "ReplicaSets synced at once.")
	fs.IntVar(&o.ConcurrentJobSyncs, "concurrent-job-syncs", o.ConcurrentJobSyncs, "Jobs synced at once.")
	fs.IntVar(&o.ConcurrentGCSyncs, "concurrent-gc-syncs", o.ConcurrentGCSyncs, "Garbage collector workers.")
	fs.IntVar(&o.ConcurrentNamespaceSyncs, "concurrent-namespace-syncs", o.ConcurrentNamespaceSyncs, "Namespaces deleted at once.")
	fs.IntVar(&o.ConcurrentTTLSyncs, "concurrent-ttl-after-finished-syncs", o.ConcurrentTTLSyncs, "Finished Jobs checked for ttlSecondsAfterFinished at once.")
	fs.IntVar(&o.ConcurrentEndpointSyncs, "concurrent-endpoint-syncs", o.ConcurrentEndpointSyncs, "Services whose Endpoints are synced at once.")
	fs.IntVar(&o.ConcurrentServiceEndpointSyncs, "concurrent-service-endpoint-syncs", o.ConcurrentServiceEndpointSyncs, "Services whose EndpointSlices are synced at once (1 to 50).")
	fs.IntVar(&o.MaxEndpointsPerSlice, "max-endpoints-per-slice", o.MaxEndpointsPerSlice, "Most endpoints in one EndpointSlice (1 to 1000).")
	fs.StringVar(&o.RootCAFile, "root-ca-file", o.RootCAFile, "CA bundle published as kube-root-ca.crt (key ca.crt) in every namespace; default: the CA in --kubeconfig.")
	fs.IntVar(&o.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", o.TerminatedPodGCThreshold, "Finished pods kept before the oldest are deleted; 0 keeps all.")
	o.LeaderElection.AddFlags(fs, "kube-controller-manager")
}

// Validate reports every flag that is wrong.
func (o *Options) Validate() error {
	var errs []string
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Sprintf("--bind-address %q: %v", o.BindAddress, err))
	}
	if _, err := EnabledControllers(o.Controllers); err != nil {
		errs = append(errs, err.Error())
	}
	if o.AllocateNodeCIDRs {
		_, cidr, err := net.ParseCIDR(o.ClusterCIDR)
		switch {
		case o.ClusterCIDR == "":
			errs = append(errs, "--allocate-node-cidrs needs --cluster-cidr")
		case err != nil:
			errs = append(errs, fmt.Sprintf("--cluster-cidr %q: %v", o.ClusterCIDR, err))
		default:
			ones, bits := cidr.Mask.Size()
			if o.NodeCIDRMaskSize < ones || o.NodeCIDRMaskSize > bits {
				errs = append(errs, fmt.Sprintf("--node-cidr-mask-size %d must lie between the cluster CIDR's prefix /%d and /%d", o.NodeCIDRMaskSize, ones, bits))
			}
		}
	}
	if o.NodeMonitorGracePeriod <= 0 || o.NodeMonitorPeriod <= 0 {
		errs = append(errs, "--node-monitor-grace-period and --node-monitor-period must be positive")
	}
	for name, n := range map[string]int{
		"--concurrent-deployment-syncs": o.ConcurrentDeploymentSyncs, "--concurrent-replicaset-syncs": o.ConcurrentReplicaSetSyncs,
		"--concurrent-job-syncs": o.ConcurrentJobSyncs, "--concurrent-gc-syncs": o.ConcurrentGCSyncs,
		"--concurrent-namespace-syncs": o.ConcurrentNamespaceSyncs, "--concurrent-ttl-after-finished-syncs": o.ConcurrentTTLSyncs,
		"--concurrent-endpoint-syncs": o.ConcurrentEndpointSyncs, "--concurrent-service-endpoint-syncs": o.ConcurrentServiceEndpointSyncs,
	} {
		if n < 1 {
			errs = append(errs, fmt.Sprintf("%s must be at least 1", name))
		}
	}
	// Upstream's bounds.
	if o.ConcurrentServiceEndpointSyncs > 50 {
		errs = append(errs, fmt.Sprintf("--concurrent-service-endpoint-syncs must not be more than 50, but got %d", o.ConcurrentServiceEndpointSyncs))
	}
	if o.MaxEndpointsPerSlice < 1 || o.MaxEndpointsPerSlice > 1000 {
		errs = append(errs, fmt.Sprintf("--max-endpoints-per-slice must lie between 1 and 1000, but got %d", o.MaxEndpointsPerSlice))
	}
	if o.TerminatedPodGCThreshold < 0 {
		errs = append(errs, "--terminated-pod-gc-threshold must not be negative")
	}
	if err := o.LeaderElection.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("invalid options: %s", strings.Join(errs, "; "))
	}
	return nil
}

// canonicalName maps upstream's newer long names to ours.
func canonicalName(name string) string {
	switch name {
	case "deployment-controller":
		return "deployment"
	case "replicaset-controller":
		return "replicaset"
	case "job-controller":
		return "job"
	case "garbage-collector-controller":
		return "garbagecollector"
	case "node-lifecycle-controller":
		return "nodelifecycle"
	case "node-ipam-controller":
		return "nodeipam"
	case "namespace-controller":
		return "namespace"
	case "pod-garbage-collector-controller":
		return "podgc"
	case "ttl-after-finished-controller":
		return "ttlafterfinished"
	case "disruption-controller":
		return "disruption"
	case "endpoints-controller":
		return "endpoint"
	case "endpointslice-controller":
		return "endpointslice"
	case "root-ca-certificate-publisher-controller":
		return "root-ca-cert-publisher"
	}
	return name
}

// KnownControllers lists the controller names, sorted.
func KnownControllers() []string {
	return []string{"deployment", "disruption", "endpoint", "endpointslice", "garbagecollector", "job", "namespace", "nodeipam", "nodelifecycle", "podgc", "replicaset", "root-ca-cert-publisher", "ttlafterfinished"}
}

// EnabledControllers resolves --controllers with upstream's rules: '*'
// turns on every controller, 'name' one, '-name' turns one off (and wins).
func EnabledControllers(spec []string) (map[string]bool, error) {
	known := KnownControllers()
	star := false
	on, off := map[string]bool{}, map[string]bool{}
	for _, raw := range spec {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		if s == "*" {
			star = true
			continue
		}
		neg := strings.HasPrefix(s, "-")
		name := canonicalName(strings.TrimPrefix(s, "-"))
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", name, strings.Join(known, ", "))
		}
		if neg {
			off[name] = true
		} else {
			on[name] = true
		}
	}
	out := map[string]bool{}
	for _, name := range known {
		out[name] = !off[name] && (star || on[name])
	}
	return out, nil
}
