package services

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

var serviceRange = netip.MustParsePrefix("10.96.0.0/16")

func TestClusterIPAllocation(t *testing.T) {
	ctx := ctxT(t)
	c := framework.StartEtcd(t)
	s := startServer(t, c, apiserver.Config{})
	svcs := s.Client.CoreV1().Services("default")

	web, err := svcs.Create(ctx, newService("web", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(web.Spec.ClusterIP)
	if err != nil || !serviceRange.Contains(ip) || ip.String() == "10.96.0.1" {
		t.Fatalf("clusterIP %q: want an address of %s other than the kubernetes Service's", web.Spec.ClusterIP, serviceRange)
	}
	if len(web.Spec.ClusterIPs) != 1 || web.Spec.ClusterIPs[0] != web.Spec.ClusterIP {
		t.Errorf("clusterIPs = %v, want [%s]", web.Spec.ClusterIPs, web.Spec.ClusterIP)
	}
	if p := web.Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicySingleStack ||
		len(web.Spec.IPFamilies) != 1 || web.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("ipFamilyPolicy %v ipFamilies %v, want SingleStack [IPv4]", web.Spec.IPFamilyPolicy, web.Spec.IPFamilies)
	}

	// A requested address that is taken, or outside the range: upstream's 422s.
	taken := newService("taken", "")
	taken.Spec.ClusterIP = web.Spec.ClusterIP
	_, err = svcs.Create(ctx, taken, metav1.CreateOptions{})
	want := fmt.Sprintf(`Service "taken" is invalid: spec.clusterIPs: Invalid value: ["%s"]: failed to allocate IP %s: provided IP is already allocated`, web.Spec.ClusterIP, web.Spec.ClusterIP)
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("taken IP: %v\nwant %s", err, want)
	}
	outside := newService("outside", "")
	outside.Spec.ClusterIP = "10.97.0.5"
	_, err = svcs.Create(ctx, outside, metav1.CreateOptions{})
	want = `Service "outside" is invalid: spec.clusterIPs: Invalid value: ["10.97.0.5"]: failed to allocate IP 10.97.0.5: the provided IP (10.97.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/16`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("outside IP: %v\nwant %s", err, want)
	}

	// Headless stays headless; ExternalName gets no address.
	headless := newService("headless", "")
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if headless, err = svcs.Create(ctx, headless, metav1.CreateOptions{}); err != nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless: %v, clusterIP %q", err, headless.Spec.ClusterIP)
	}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	if ext, err = svcs.Create(ctx, ext, metav1.CreateOptions{}); err != nil || ext.Spec.ClusterIP != "" || len(ext.Spec.ClusterIPs) != 0 {
		t.Errorf("externalName: %v, clusterIPs %v", err, ext.Spec.ClusterIPs)
	}

	// The address is immutable.
	changed := web.DeepCopy()
	changed.Spec.ClusterIP, changed.Spec.ClusterIPs = "10.96.5.5", []string{"10.96.5.5"}
	_, err = svcs.Update(ctx, changed, metav1.UpdateOptions{})
	if want := `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.5.5"]: may not change once set`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("changing clusterIP: %v\nwant %s", err, want)
	}

	// Dry-run takes nothing: the address it would have taken is free.
	before := claims(t, c)
	if _, err := svcs.Create(ctx, newService("dry", corev1.ServiceTypeNodePort), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if after := claims(t, c); after != before {
		t.Errorf("a dry-run create left %d claims, %d before", after, before)
	}
	dry := newService("dry", "")
	dry.Spec.ClusterIP = "10.96.7.7"
	if _, err := svcs.Create(ctx, dry, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if _, err := svcs.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run stored the service: %v", err)
	}
	real := newService("real", "")
	real.Spec.ClusterIP = "10.96.7.7"
	if _, err := svcs.Create(ctx, real, metav1.CreateOptions{}); err != nil {
		t.Errorf("the address a dry run asked for is still taken: %v", err)
	}

	// A failed create frees what it took: the address a create refused
	// for its bad port asked for can be taken by the next one.
	bad := newService("bad", "")
	bad.Spec.ClusterIP = "10.96.8.8"
	bad.Spec.Ports[0].Port = 0
	if _, err := svcs.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("port 0: %v, want 422", err)
	}
	good := newService("good", "")
	good.Spec.ClusterIP = "10.96.8.8"
	if _, err := svcs.Create(ctx, good, metav1.CreateOptions{}); err != nil {
		t.Errorf("the address of a refused create is still taken: %v", err)
	}

	// Deleting frees the address; ClusterIP → ExternalName too.
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := newService("again", "")
	again.Spec.ClusterIP = web.Spec.ClusterIP
	if _, err := svcs.Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Errorf("the address of a deleted service: %v", err)
	}
	toExt := good.DeepCopy()
	cur, _ := svcs.Get(ctx, "good", metav1.GetOptions{})
	toExt.ResourceVersion = cur.ResourceVersion
	toExt.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
	if _, err := svcs.Update(ctx, toExt, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("to ExternalName: %v", err)
	}
	reuse := newService("reuse", "")
	reuse.Spec.ClusterIP = "10.96.8.8"
	if _, err := svcs.Create(ctx, reuse, metav1.CreateOptions{}); err != nil {
		t.Errorf("the address of a service turned ExternalName: %v", err)
	}
}

func TestNodePortAllocation(t *testing.T) {
	ctx := ctxT(t)
	c := framework.StartEtcd(t)
	s := startServer(t, c, apiserver.Config{})
	svcs := s.Client.CoreV1().Services("default")

	np, err := svcs.Create(ctx, newService("np", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := np.Spec.Ports[0].NodePort
	if port < 30000 || port > 32767 {
		t.Fatalf("nodePort %d: want one of 30000-32767", port)
	}

	taken := newService("taken", corev1.ServiceTypeNodePort)
	taken.Spec.Ports[0].NodePort = port
	_, err = svcs.Create(ctx, taken, metav1.CreateOptions{})
	want := fmt.Sprintf(`Service "taken" is invalid: spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated`, port)
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("taken port: %v\nwant %s", err, want)
	}

	lb := newService("lb", corev1.ServiceTypeLoadBalancer)
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if lb, err = svcs.Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if lb.Spec.Ports[0].NodePort == 0 || lb.Spec.HealthCheckNodePort == 0 || lb.Spec.HealthCheckNodePort == lb.Spec.Ports[0].NodePort {
		t.Errorf("load balancer: nodePort %d healthCheckNodePort %d, want two different ports", lb.Spec.Ports[0].NodePort, lb.Spec.HealthCheckNodePort)
	}

	// An update that leaves the cluster IP and node ports out (a manifest
	// applied again) keeps them, and claims nothing more.
	before := claims(t, c)
	cur, err := svcs.Get(ctx, "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.ClusterIP, cur.Spec.ClusterIPs, cur.Spec.Ports[0].NodePort = "", nil, 0
	cur.Spec.Ports[0].TargetPort = intstr.FromInt32(9090)
	if cur, err = svcs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cur.Spec.ClusterIP != np.Spec.ClusterIP || cur.Spec.Ports[0].NodePort != port {
		t.Errorf("after an update without them: clusterIP %s nodePort %d, want %s %d", cur.Spec.ClusterIP, cur.Spec.Ports[0].NodePort, np.Spec.ClusterIP, port)
	}
	if after := claims(t, c); after != before {
		t.Errorf("the update changed the claims from %d to %d", before, after)
	}

	// NodePort → ClusterIP frees the node port.
	cur.Spec.Type = corev1.ServiceTypeClusterIP
	if cur, err = svcs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("to ClusterIP: %v", err)
	}
	if cur.Spec.Ports[0].NodePort != 0 {
		t.Errorf("a ClusterIP service kept nodePort %d", cur.Spec.Ports[0].NodePort)
	}
	if _, err := svcs.Create(ctx, taken, metav1.CreateOptions{}); err != nil {
		t.Errorf("the node port of a service turned ClusterIP: %v", err)
	}
}

// TestRestartKeepsAllocations: a new apiserver on the same etcd knows
// what the old one handed out.
func TestRestartKeepsAllocations(t *testing.T) {
	ctx := ctxT(t)
	c := framework.StartEtcd(t)
	first := startServer(t, c, apiserver.Config{})
	web, err := first.Client.CoreV1().Services("default").Create(ctx, newService("web", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first.Stop()

	second := startServer(t, c, apiserver.Config{})
	svc := newService("other", corev1.ServiceTypeNodePort)
	svc.Spec.ClusterIP = web.Spec.ClusterIP
	if _, err := second.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Errorf("the address taken before the restart: %v", err)
	}
	svc = newService("other", corev1.ServiceTypeNodePort)
	svc.Spec.Ports[0].NodePort = web.Spec.Ports[0].NodePort
	if _, err := second.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "provided port is already allocated") {
		t.Errorf("the node port taken before the restart: %v", err)
	}
}

// TestTwoAPIServersNeverShareAnAddress fills a small range from two
// apiservers at once: every address differs, and the range then is full.
func TestTwoAPIServersNeverShareAnAddress(t *testing.T) {
	ctx := ctxT(t)
	c := framework.StartEtcd(t)
	cfg := apiserver.Config{ServiceClusterIPRange: "10.96.0.0/28"} // 14 addresses, the first the kubernetes Service's
	servers := []*framework.Server{startServer(t, c, cfg), startServer(t, c, cfg)}
	const n = 13
	ips := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			svc, err := servers[i%2].Client.CoreV1().Services("default").Create(ctx, newService(fmt.Sprintf("s%d", i), ""), metav1.CreateOptions{})
			if err == nil {
				ips[i] = svc.Spec.ClusterIP
			}
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[string]int{"10.96.0.1": -1}
	for i, ip := range ips {
		if errs[i] != nil {
			t.Errorf("service %d: %v", i, errs[i])
			continue
		}
		if j, dup := seen[ip]; dup {
			t.Errorf("services %d and %d both got %s", j, i, ip)
		}
		seen[ip] = i
	}
	_, err := servers[0].Client.CoreV1().Services("default").Create(ctx, newService("full", ""), metav1.CreateOptions{})
	want := `Internal error occurred: failed to allocate a serviceIP for Service "full": range is full`
	if !apierrors.IsInternalError(err) || err.Error() != want {
		t.Errorf("a full range: %v\nwant %s", err, want)
	}
}

func TestNodePortRangeFull(t *testing.T) {
	ctx := ctxT(t)
	c := framework.StartEtcd(t)
	s := startServer(t, c, apiserver.Config{ServiceNodePortRange: "30000-30001"})
	svcs := s.Client.CoreV1().Services("default")
	two := newService("two", corev1.ServiceTypeNodePort)
	two.Spec.Ports = append(two.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443})
	if _, err := svcs.Create(ctx, two, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := claims(t, c)
	_, err := svcs.Create(ctx, newService("full", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	want := "Internal error occurred: failed to allocate a nodePort: range is full"
	if !apierrors.IsInternalError(err) || err.Error() != want {
		t.Errorf("a full node port range: %v\nwant %s", err, want)
	}
	// The cluster IP the refused create had taken went back.
	if after := claims(t, c); after != before {
		t.Errorf("the refused create left %d claims, %d before", after, before)
	}
}
