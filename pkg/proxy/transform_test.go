package proxy

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

// What the informers keep renders the same table as the whole objects, for
// every golden state, and leaves out what the proxy never reads.
func TestSlimObjectsRenderTheSameRules(t *testing.T) {
	fat := func(m *metav1.ObjectMeta) {
		m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"big":"json"}`
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["app"] = "web"
	}
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var slimmed State
			slimmed.NodeIPs = tc.state.NodeIPs
			for _, svc := range tc.state.Services {
				svc = svc.DeepCopy()
				fat(&svc.ObjectMeta)
				svc.Spec.Selector = map[string]string{"app": "web"}
				svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}
				got, err := slim(svc)
				if err != nil {
					t.Fatal(err)
				}
				s := got.(*v1.Service)
				if s.ManagedFields != nil || s.Annotations != nil || s.Labels != nil || s.Spec.Selector != nil || s.Status.LoadBalancer.Ingress != nil {
					t.Errorf("Service %s kept %+v", svc.Name, s)
				}
				slimmed.Services = append(slimmed.Services, s)
			}
			for _, es := range tc.state.Slices {
				es = es.DeepCopy()
				fat(&es.ObjectMeta)
				es.Annotations[v1.EndpointsLastChangeTriggerTime] = "2026-11-29T03:00:00Z"
				for i := range es.Endpoints {
					es.Endpoints[i].TargetRef = &v1.ObjectReference{Kind: "Pod", Name: "web-1"}
					es.Endpoints[i].Zone = ptr.To("zone-a")
					es.Endpoints[i].Addresses = append(es.Endpoints[i].Addresses, "10.244.9.9")
				}
				got, err := slim(es)
				if err != nil {
					t.Fatal(err)
				}
				s := got.(*discoveryv1.EndpointSlice)
				if s.ManagedFields != nil || len(s.Labels) != 1 || len(s.Annotations) != 1 || s.Annotations[v1.EndpointsLastChangeTriggerTime] == "" {
					t.Errorf("EndpointSlice %s kept labels %v, annotations %v, managedFields %v; want the service name and the trigger time only", es.Name, s.Labels, s.Annotations, s.ManagedFields)
				}
				for _, e := range s.Endpoints {
					if e.TargetRef != nil || e.Zone != nil || len(e.Addresses) != 1 {
						t.Errorf("EndpointSlice %s kept %+v", es.Name, e)
					}
				}
				slimmed.Slices = append(slimmed.Slices, s)
			}
			want := apply(t, knftables.NewFake(knftables.IPv4Family, TableName), cfg, tc.state)
			if got := apply(t, knftables.NewFake(knftables.IPv4Family, TableName), cfg, slimmed); got != want {
				t.Errorf("slimmed objects render:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/web"}
	if got, err := slim(tombstone); err != nil || got != tombstone {
		t.Errorf("a tombstone became %v, %v; want it unchanged", got, err)
	}
}
