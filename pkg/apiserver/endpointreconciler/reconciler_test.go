package endpointreconciler

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDesired(t *testing.T) {
	tests := []struct {
		name string
		ips  []string
		want []string
	}{
		{"none", nil, nil},
		{"one", []string{"10.0.0.7"}, []string{"10.0.0.7"}},
		{"sorted, once each", []string{"10.0.0.9", "10.0.0.7", "10.0.0.9"}, []string{"10.0.0.7", "10.0.0.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, slice := Desired(tt.ips, 6443)
			var epIPs, sliceIPs []string
			for _, ss := range ep.Subsets {
				for _, a := range ss.Addresses {
					epIPs = append(epIPs, a.IP)
				}
				if want := []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}}; !reflect.DeepEqual(ss.Ports, want) {
					t.Errorf("endpoints ports %+v", ss.Ports)
				}
			}
			for _, e := range slice.Endpoints {
				sliceIPs = append(sliceIPs, e.Addresses...)
				if e.Conditions.Ready == nil || !*e.Conditions.Ready {
					t.Errorf("endpoint %v not ready", e.Addresses)
				}
			}
			if !reflect.DeepEqual(epIPs, tt.want) || !reflect.DeepEqual(sliceIPs, tt.want) {
				t.Errorf("endpoints %v, slice %v, want %v", epIPs, sliceIPs, tt.want)
			}
			if ep.Labels[discoveryv1.LabelSkipMirror] != "true" || slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" ||
				slice.AddressType != discoveryv1.AddressTypeIPv4 {
				t.Errorf("labels %v %v, address type %s", ep.Labels, slice.Labels, slice.AddressType)
			}
		})
	}
}

type fakeLeases map[string]bool

func (l fakeLeases) Renew(_ context.Context, ip string) error  { l[ip] = true; return nil }
func (l fakeLeases) Remove(_ context.Context, ip string) error { delete(l, ip); return nil }
func (l fakeLeases) List(context.Context) ([]string, error) {
	var ips []string
	for ip := range l {
		ips = append(ips, ip)
	}
	return ips, nil
}

type fakeWriter struct {
	svc *corev1.Service
	ep  *corev1.Endpoints
}

func (w *fakeWriter) EnsureService(_ context.Context, svc *corev1.Service) error {
	w.svc = svc
	return nil
}
func (w *fakeWriter) Apply(_ context.Context, ep *corev1.Endpoints, _ *discoveryv1.EndpointSlice) error {
	w.ep = ep
	return nil
}

func TestReconcileAndStop(t *testing.T) {
	leases := fakeLeases{"10.0.0.9": true} // another live apiserver
	w := &fakeWriter{}
	r := &Reconciler{Leases: leases, Writer: w, IP: "10.0.0.7", Port: 6443, ClusterIP: "10.96.0.1",
		Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))}
	if err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.svc.Spec.ClusterIP != "10.96.0.1" || w.svc.Spec.Ports[0].TargetPort.IntValue() != 6443 {
		t.Errorf("service %+v", w.svc.Spec)
	}
	if got := len(w.ep.Subsets[0].Addresses); got != 2 {
		t.Errorf("%d addresses, want both apiservers", got)
	}
	r.stop()
	if got := w.ep.Subsets[0].Addresses; len(got) != 1 || got[0].IP != "10.0.0.9" {
		t.Errorf("after stop: %v, want the other apiserver alone", got)
	}
}
