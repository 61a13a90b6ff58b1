package services

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// TestKubernetesService: the apiserver creates the kubernetes Service at
// the range's first address, with its advertised address as endpoints.
func TestKubernetesService(t *testing.T) {
	ctx := ctxT(t)
	s := startServer(t, framework.StartEtcd(t), apiserver.Config{AdvertiseAddress: "10.0.0.7", AdvertisePort: 6443})
	svc, err := s.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https" ||
		svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntValue() != 6443 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("kubernetes service: clusterIP %s ports %+v", svc.Spec.ClusterIP, svc.Spec.Ports)
	}
	ep, err := s.Client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.7"}},
		Ports: []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}}}}
	if !reflect.DeepEqual(ep.Subsets, want) {
		t.Errorf("kubernetes endpoints: %+v, want %+v", ep.Subsets, want)
	}
	slice, err := s.Client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" || slice.AddressType != discoveryv1.AddressTypeIPv4 ||
		len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != "10.0.0.7" || *slice.Ports[0].Port != 6443 {
		t.Errorf("kubernetes endpointslice: %+v", slice)
	}
}

// TestTwoAPIServersInKubernetesEndpoints: both live apiservers are
// endpoints; one that stops leaves them.
func TestTwoAPIServersInKubernetesEndpoints(t *testing.T) {
	ctx := ctxT(t)
	c := framework.StartEtcd(t)
	a := startServer(t, c, apiserver.Config{AdvertiseAddress: "10.0.0.7"})
	b := startServer(t, c, apiserver.Config{AdvertiseAddress: "10.0.0.8"})
	addresses := func() []string {
		ep, err := a.Client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) == 0 {
			return nil
		}
		var ips []string
		for _, ad := range ep.Subsets[0].Addresses {
			ips = append(ips, ad.IP)
		}
		return ips
	}
	// The second server wrote both leases' addresses before it served.
	if got := addresses(); !reflect.DeepEqual(got, []string{"10.0.0.7", "10.0.0.8"}) {
		t.Errorf("endpoints with two apiservers: %v", got)
	}
	b.Stop()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return reflect.DeepEqual(addresses(), []string{"10.0.0.7"}), nil
	})
	if err != nil {
		t.Errorf("endpoints after one apiserver stopped: %v", addresses())
	}
}

func TestEndpointsAndSlices(t *testing.T) {
	ctx := ctxT(t)
	s := startServer(t, framework.StartEtcd(t), apiserver.Config{})
	ns := "default"
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.244.0.5"}, {IP: "10.244.0.6"}, {IP: "10.244.1.7"}, {IP: "10.244.2.8"}},
		Ports:     []corev1.EndpointPort{{Port: 5432}},
	}}}
	got, err := s.Client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("protocol not defaulted: %+v", got.Subsets[0].Ports[0])
	}
	bad := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80}},
	}}}
	_, err = s.Client.CoreV1().Endpoints(ns).Create(ctx, bad, metav1.CreateOptions{})
	if want := `Endpoints "bad" is invalid: subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("loopback endpoint: %v\nwant %s", err, want)
	}

	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "db-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](5432)}},
	}
	gotSlice, err := s.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := gotSlice.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
		t.Errorf("port not defaulted: %+v", p)
	}
	list, err := s.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=db"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "db-abcde" {
		t.Fatalf("list by service name: %v %v", list, err)
	}
	gotSlice.AddressType = discoveryv1.AddressTypeIPv6
	_, err = s.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, gotSlice, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "addressType: Invalid value: \"IPv6\": field is immutable") {
		t.Errorf("changing addressType: %v", err)
	}

	// Discovery and OpenAPI (kubectl apply's validation) know both.
	core, err := s.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil || !hasResource(core.APIResources, "endpoints", "ep") {
		t.Errorf("core/v1 discovery lacks endpoints (ep): %v", err)
	}
	disc, err := s.Client.Discovery().ServerResourcesForGroupVersion("discovery.k8s.io/v1")
	if err != nil || !hasResource(disc.APIResources, "endpointslices", "") {
		t.Errorf("discovery.k8s.io/v1 discovery lacks endpointslices: %v", err)
	}
	doc, err := s.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/discovery.k8s.io/v1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(doc), `"io.k8s.api.discovery.v1.EndpointSlice"`) {
		t.Errorf("openapi v3 of discovery.k8s.io/v1: %v", err)
	}

	// kubectl get's tables.
	rows := table(t, s.Config, "/api/v1/namespaces/default/endpoints/db")
	if rows.cols != "Name Endpoints Age" || rows.cells[1] != "10.244.0.5:5432,10.244.0.6:5432,10.244.1.7:5432 + 1 more..." {
		t.Errorf("endpoints table: %s %v", rows.cols, rows.cells)
	}
	rows = table(t, s.Config, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/db-abcde")
	if rows.cols != "Name AddressType Ports Endpoints Age" || rows.cells[1] != "IPv4" || rows.cells[2] != "5432" || rows.cells[3] != "10.244.0.5" {
		t.Errorf("endpointslices table: %s %v", rows.cols, rows.cells)
	}
	np, err := s.Client.CoreV1().Services(ns).Create(ctx, newService("np", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows = table(t, s.Config, "/api/v1/namespaces/default/services/np")
	if want := "80:" + strconv.Itoa(int(np.Spec.Ports[0].NodePort)) + "/TCP"; rows.cells[2] != np.Spec.ClusterIP || rows.cells[4] != want {
		t.Errorf("services table: %v, want CLUSTER-IP %s PORT(S) %s", rows.cells, np.Spec.ClusterIP, want)
	}
}

type tableRow struct {
	cols  string
	cells []interface{}
}

// table GETs path as kubectl get does and returns the column names and the
// first row.
func table(t *testing.T, cfg *rest.Config, path string) tableRow {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tbl metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&tbl); err != nil || len(tbl.Rows) != 1 {
		t.Fatalf("table of %s: %v %+v", path, err, tbl)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	return tableRow{cols: strings.Join(names, " "), cells: tbl.Rows[0].Cells}
}

func hasResource(list []metav1.APIResource, name, short string) bool {
	for _, r := range list {
		if r.Name == name && (short == "" || slices.Contains(r.ShortNames, short)) {
			return true
		}
	}
	return false
}
