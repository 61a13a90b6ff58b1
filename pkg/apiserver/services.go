package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/endpointreconciler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/servicealloc"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// Upstream's defaults for the service ranges.
const (
	DefaultServiceClusterIPRange = "10.96.0.0/16"
	DefaultServiceNodePortRange  = "30000-32767"
)

var (
	servicesGR       = schema.GroupResource{Resource: "services"}
	endpointsGR      = schema.GroupResource{Resource: "endpoints"}
	endpointSlicesGR = schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}
)

// newServiceAllocators builds the cluster IP and node port allocators on
// etcd and gives them to the services resource of resources (a copy: the
// caller's list stays as it was).
func newServiceAllocators(cfg *Config) (*servicealloc.Services, *servicealloc.IPRange, error) {
	ipRange, portRange := cfg.ServiceClusterIPRange, cfg.ServiceNodePortRange
	if ipRange == "" {
		ipRange = DefaultServiceClusterIPRange
	}
	if portRange == "" {
		portRange = DefaultServiceNodePortRange
	}
	ips, err := servicealloc.ParseIPRange(ipRange)
	if err != nil {
		return nil, nil, fmt.Errorf("--service-cluster-ip-range: %w", err)
	}
	ports, err := servicealloc.ParsePortRange(portRange)
	if err != nil {
		return nil, nil, fmt.Errorf("--service-node-port-range: %w", err)
	}
	st := servicealloc.NewEtcdStore(cfg.Etcd.KV)
	svcs := &servicealloc.Services{
		IPs:   servicealloc.NewIPAllocator(st, cfg.EtcdPrefix+servicealloc.IPPrefix, ips, cfg.Clock),
		Ports: servicealloc.NewPortAllocator(st, cfg.EtcdPrefix+servicealloc.PortPrefix, ports, cfg.Clock),
	}
	out := make([]*registry.Resource, len(cfg.Resources))
	for i, res := range cfg.Resources {
		out[i] = res
		if res.GroupVersion.Group == "" && res.Name == servicesGR.Resource {
			withAlloc := *res
			withAlloc.Allocator = svcs
			out[i] = &withAlloc
		}
	}
	cfg.Resources = out
	return svcs, ips, nil
}

// startServices keeps the `kubernetes` Service and, with an advertised
// address, its endpoints, and starts the allocations' repair loop.
func (s *Server) startServices(ctx context.Context) error {
	svcStore, ok := s.Store(servicesGR)
	if !ok || s.serviceAlloc == nil {
		return nil
	}
	w := &serviceWriter{s: s, services: svcStore}
	w.endpoints, _ = s.Store(endpointsGR)
	w.slices, _ = s.Store(endpointSlicesGR)
	if err := w.EnsureService(ctx, endpointreconciler.Service(s.serviceIPs.First(), s.advertisePort)); err != nil {
		// Not fatal: the reconciler tries again, and the API serves.
		slog.Warn("the kubernetes service is missing", "err", err)
	}
	repair := &servicealloc.Repairer{Services: s.serviceAlloc, Clock: clock.RealClock{}, List: func(ctx context.Context) ([]corev1.Service, error) {
		list := &corev1.ServiceList{}
		err := svcStore.Storage.List(ctx, svcStore.Prefix, storage.ListOptions{}, list)
		return list.Items, err
	}}
	go repair.Run(ctx)
	if s.advertiseAddress == "" || w.endpoints == nil || w.slices == nil {
		slog.Info("no advertise address: the kubernetes Service gets no endpoints")
		return nil
	}
	r := &endpointreconciler.Reconciler{
		Leases: &endpointreconciler.EtcdLeases{Client: s.etcd, Prefix: s.etcdPrefix + endpointreconciler.LeasePrefix},
		Writer: w, IP: s.advertiseAddress, Port: s.advertisePort, ClusterIP: s.serviceIPs.First(), Clock: clock.RealClock{},
	}
	// The first pass is done before serving, so that clients started with
	// the server find it among the endpoints.
	if err := r.Reconcile(ctx); err != nil {
		slog.Warn("kubernetes service endpoints not reconciled", "err", err)
	}
	go r.Run(ctx)
	return nil
}

// serviceWriter writes the kubernetes Service and its endpoints straight
// to storage, as the server's own objects.
type serviceWriter struct {
	s                           *Server
	services, endpoints, slices *handler.Store
}

// EnsureService implements endpointreconciler.Writer.
func (w *serviceWriter) EnsureService(ctx context.Context, want *corev1.Service) error {
	st := w.services
	key := st.Key(want.Namespace, want.Name)
	for attempt := 0; attempt < 5; attempt++ {
		cur := &corev1.Service{}
		err := st.Storage.Get(ctx, key, cur)
		if err == nil {
			if apiequality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) {
				return nil
			}
			return st.Storage.GuaranteedUpdate(ctx, key, &corev1.Service{}, false, nil, func(obj runtime.Object) (runtime.Object, error) {
				svc := obj.(*corev1.Service)
				svc.Spec.Ports = want.Spec.Ports
				return svc, nil
			})
		}
		if !errors.Is(err, storage.ErrKeyNotFound) {
			return fmt.Errorf("read the kubernetes service: %w", err)
		}
		svc := want.DeepCopy()
		w.s.prepareCreated(ctx, st, svc)
		alloc, err := st.Allocator.Allocate(ctx, svc, nil, false)
		if err != nil {
			// Another apiserver may be creating it at the same time.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		err = st.Storage.Create(ctx, key, svc, &corev1.Service{})
		alloc.Finish(ctx, err == nil)
		if err == nil || errors.Is(err, storage.ErrKeyExists) {
			continue
		}
		return fmt.Errorf("create the kubernetes service: %w", err)
	}
	return fmt.Errorf("the kubernetes service could not be created with its cluster IP %s", want.Spec.ClusterIP)
}

// Apply implements endpointreconciler.Writer.
func (w *serviceWriter) Apply(ctx context.Context, ep *corev1.Endpoints, slice *discoveryv1.EndpointSlice) error {
	err := w.apply(ctx, w.endpoints, ep, func(cur runtime.Object) bool {
		c := cur.(*corev1.Endpoints)
		if apiequality.Semantic.DeepEqual(c.Subsets, ep.Subsets) && apiequality.Semantic.DeepEqual(c.Labels, ep.Labels) {
			return false
		}
		c.Subsets, c.Labels = ep.Subsets, ep.Labels
		return true
	})
	if err != nil {
		return err
	}
	return w.apply(ctx, w.slices, slice, func(cur runtime.Object) bool {
		c := cur.(*discoveryv1.EndpointSlice)
		if apiequality.Semantic.DeepEqual(c.Endpoints, slice.Endpoints) && apiequality.Semantic.DeepEqual(c.Ports, slice.Ports) &&
			apiequality.Semantic.DeepEqual(c.Labels, slice.Labels) {
			return false
		}
		c.Endpoints, c.Ports, c.Labels = slice.Endpoints, slice.Ports, slice.Labels
		c.Generation++
		return true
	})
}

// apply creates want or, when it exists, lets change update it (change
// reports whether it changed anything).
func (w *serviceWriter) apply(ctx context.Context, st *handler.Store, want serverObject, change func(cur runtime.Object) bool) error {
	key := st.Key(want.GetNamespace(), want.GetName())
	err := st.Storage.GuaranteedUpdate(ctx, key, st.New(), false, nil, func(cur runtime.Object) (runtime.Object, error) {
		if !change(cur) {
			return nil, nil
		}
		return cur, nil
	})
	if !errors.Is(err, storage.ErrKeyNotFound) {
		return err
	}
	return w.s.createIfAbsent(ctx, st, want.DeepCopyObject().(serverObject))
}
