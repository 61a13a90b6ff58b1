// Package endpointreconciler keeps the `kubernetes` Service in `default` and
// its Endpoints and EndpointSlice equal to the live apiservers, as upstream's
// "lease" endpoint reconciler: each apiserver renews a lease on its
// advertised address that expires unless renewed, and every one of them
// writes the endpoints of the leases it finds.
package endpointreconciler

import (
	"context"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
)

// Upstream's names and timings.
const (
	ServiceName = "kubernetes"
	portName    = "https"
	// Interval is how often leases are renewed and endpoints reconciled;
	// TTL how long a lease outlives its last renewal.
	Interval = 10 * time.Second
	TTL      = 15 * time.Second
)

// Leases are the apiservers' claims to be alive.
type Leases interface {
	// Renew claims ip for another TTL.
	Renew(ctx context.Context, ip string) error
	// List returns the addresses of the live leases.
	List(ctx context.Context) ([]string, error)
	// Remove drops ip's lease (a server shutting down).
	Remove(ctx context.Context, ip string) error
}

// Writer stores what the reconciler decided.
type Writer interface {
	// EnsureService creates svc (claiming its cluster IP) unless a Service
	// of its name exists, whose ports it then sets to svc's.
	EnsureService(ctx context.Context, svc *corev1.Service) error
	// Apply writes the Endpoints and the EndpointSlice where they differ.
	Apply(ctx context.Context, ep *corev1.Endpoints, slice *discoveryv1.EndpointSlice) error
}

// Reconciler runs one apiserver's share.
type Reconciler struct {
	Leases Leases
	Writer Writer
	// IP is the advertised address, Port the secure port behind it,
	// ClusterIP the Service's (the service range's first address).
	IP        string
	Port      int32
	ClusterIP string
	Clock     clock.WithTicker
}

// Run reconciles every Interval until ctx ends, then takes this
// apiserver's address out of the endpoints.
func (r *Reconciler) Run(ctx context.Context) {
	t := r.Clock.NewTicker(Interval)
	defer t.Stop()
	for {
		if err := r.Reconcile(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("kubernetes service endpoints not reconciled", "err", err)
		}
		select {
		case <-ctx.Done():
			r.stop()
			return
		case <-t.C():
		}
	}
}

// stop removes this apiserver from the endpoints, as upstream does on a
// graceful shutdown, so that clients stop being sent to it at once.
func (r *Reconciler) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Leases.Remove(ctx, r.IP); err != nil {
		slog.Warn("apiserver lease not removed", "err", err)
		return
	}
	if err := r.writeEndpoints(ctx); err != nil {
		slog.Warn("apiserver not removed from the kubernetes endpoints", "err", err)
	}
}

// Reconcile renews this apiserver's lease, keeps the Service, and writes the
// endpoints of every live lease.
func (r *Reconciler) Reconcile(ctx context.Context) error {
	if err := r.Writer.EnsureService(ctx, Service(r.ClusterIP, r.Port)); err != nil {
		return err
	}
	if err := r.Leases.Renew(ctx, r.IP); err != nil {
		return err
	}
	return r.writeEndpoints(ctx)
}

func (r *Reconciler) writeEndpoints(ctx context.Context) error {
	ips, err := r.Leases.List(ctx)
	if err != nil {
		return err
	}
	ep, slice := Desired(ips, r.Port)
	return r.Writer.Apply(ctx, ep, slice)
}

// Service is the `kubernetes` Service as upstream creates it.
func Service(clusterIP string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			ClusterIP:       clusterIP,
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: portName, Protocol: corev1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(port)}},
		},
	}
}

// Desired returns the Endpoints and EndpointSlice for the live apiservers'
// addresses, sorted, as upstream's reconciler and endpoints adapter write
// them.
func Desired(ips []string, port int32) (*corev1.Endpoints, *discoveryv1.EndpointSlice) {
	ips = slices.Clone(ips)
	slices.Sort(ips)
	ips = slices.Compact(ips)
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault,
		Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if len(ips) == 0 {
		return ep, slice
	}
	ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP}}}
	for _, ip := range ips {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
		ready := true
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	ep.Subsets = []corev1.EndpointSubset{ss}
	name, proto, p := portName, corev1.ProtocolTCP, port
	slice.Ports = []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &p}}
	return ep, slice
}
