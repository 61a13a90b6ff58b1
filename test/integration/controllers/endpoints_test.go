package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

// startForServices runs the apiserver, the scheduler and a controller
// manager with the Deployment and the three Service-side controllers, and
// registers one Ready Node in zone-a that no kubelet drives: the test
// writes the pods' status itself, as a kubelet would.
func startForServices(t *testing.T) *cluster {
	t.Helper()
	c := startWithoutManager(t)
	c.runManager(func(o *manager.Options) {
		o.Controllers = []string{"deployment", "replicaset", "endpoint", "endpointslice", "root-ca-cert-publisher"}
	})
	ctx := context.Background()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.LabelHostname: "node-a", v1.LabelTopologyZone: "zone-a"}}}
	created, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = v1.NodeStatus{Capacity: rl, Allocatable: rl,
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// setPodStatus writes a running pod's IP and Ready condition.
func (c *cluster) setPodStatus(name, ip string, ready bool) {
	c.t.Helper()
	ctx := context.Background()
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = v1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ip, []v1.PodIP{{IP: ip}}
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		_, err = c.client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatalf("pod %s status: %v", name, err)
	}
}

// endpointsIPs returns the ready and not-ready IPs of the Endpoints name
// serving port 8080 (nil, nil, false when there are none).
func (c *cluster) endpointsIPs(name string) (ready, notReady []string, found bool) {
	ep, err := c.client.CoreV1().Endpoints(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, false
	}
	if err != nil {
		c.t.Fatal(err)
	}
	for _, s := range ep.Subsets {
		if len(s.Ports) != 1 || s.Ports[0].Port != 8080 || s.Ports[0].Name != "http" {
			c.t.Fatalf("endpoints subset ports %+v, want http 8080 (the named targetPort resolved)", s.Ports)
		}
		for _, a := range s.Addresses {
			ready = append(ready, a.IP)
		}
		for _, a := range s.NotReadyAddresses {
			notReady = append(notReady, a.IP)
		}
	}
	slices.Sort(ready)
	slices.Sort(notReady)
	return ready, notReady, true
}

// sliceEndpoints summarises the Service's EndpointSlices: IP → "ready=..
// serving=.. terminating=.. zone=..", and how many slices there are.
func (c *cluster) sliceEndpoints(svc string) (map[string]string, int) {
	list, err := c.client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			c.t.Fatalf("slice %s: labels %v, addressType %s", s.Name, s.Labels, s.AddressType)
		}
		for _, e := range s.Endpoints {
			out[e.Addresses[0]] = fmt.Sprintf("ready=%t serving=%t terminating=%t zone=%s node=%s",
				ptr.Deref(e.Conditions.Ready, false), ptr.Deref(e.Conditions.Serving, false), ptr.Deref(e.Conditions.Terminating, false),
				ptr.Deref(e.Zone, ""), ptr.Deref(e.NodeName, ""))
		}
	}
	return out, len(list.Items)
}

// TestServiceEndpointsFollowPods: through the apiserver, a Deployment's pods
// behind a Service show up in its Endpoints and EndpointSlice once they
// have an IP and are Ready; a pod turning unready moves to
// notReadyAddresses and ready=false; a deleted pod leaves; the Service's
// deletion takes its Endpoints and slices with it.
func TestServiceEndpointsFollowPods(t *testing.T) {
	c := startForServices(t)
	ctx := context.Background()
	d := newDeployment("web", 3, "testapp:1")
	d.Spec.Template.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}}
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	if _, err := c.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Before any pod has an IP: empty Endpoints and one placeholder slice.
	waitFor(t, "empty Endpoints and a placeholder slice", func() (bool, error) {
		ready, notReady, found := c.endpointsIPs("web")
		eps, n := c.sliceEndpoints("web")
		return found && len(ready)+len(notReady) == 0 && n == 1 && len(eps) == 0, nil
	})

	var names []string
	waitFor(t, "3 pods bound to node-a", func() (bool, error) {
		all, _, _ := c.pods("web")
		names = nil
		for _, p := range all {
			if p.Spec.NodeName == "node-a" {
				names = append(names, p.Name)
			}
		}
		return len(names) == 3, nil
	})
	slices.Sort(names)
	ips := map[string]string{}
	for i, name := range names {
		ips[name] = fmt.Sprintf("10.244.0.%d", 10+i)
		c.setPodStatus(name, ips[name], true)
	}
	allIPs := []string{"10.244.0.10", "10.244.0.11", "10.244.0.12"}
	readyOnA := "ready=true serving=true terminating=false zone=zone-a node=node-a"
	waitFor(t, "the 3 ready pods in Endpoints and the EndpointSlice", func() (bool, error) {
		ready, notReady, _ := c.endpointsIPs("web")
		eps, n := c.sliceEndpoints("web")
		return slices.Equal(ready, allIPs) && len(notReady) == 0 && n == 1 &&
			eps[allIPs[0]] == readyOnA && eps[allIPs[1]] == readyOnA && eps[allIPs[2]] == readyOnA && len(eps) == 3, nil
	})

	// One pod turns unready.
	c.setPodStatus(names[0], ips[names[0]], false)
	waitFor(t, "the unready pod under notReadyAddresses and ready=false", func() (bool, error) {
		ready, notReady, _ := c.endpointsIPs("web")
		eps, _ := c.sliceEndpoints("web")
		return slices.Equal(ready, allIPs[1:]) && slices.Equal(notReady, allIPs[:1]) &&
			eps[allIPs[0]] == "ready=false serving=false terminating=false zone=zone-a node=node-a", nil
	})

	// Another pod is deleted (its replacement has no IP yet, so it is no endpoint).
	if err := c.client.CoreV1().Pods(ns).Delete(ctx, names[1], metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod out of Endpoints and the slice", func() (bool, error) {
		ready, notReady, _ := c.endpointsIPs("web")
		eps, _ := c.sliceEndpoints("web")
		_, inSlice := eps[allIPs[1]]
		return slices.Equal(ready, allIPs[2:]) && slices.Equal(notReady, allIPs[:1]) && !inSlice && len(eps) == 2, nil
	})

	// The Service goes, and so do its Endpoints and slices.
	if err := c.client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Service's Endpoints and slices gone", func() (bool, error) {
		_, _, found := c.endpointsIPs("web")
		_, n := c.sliceEndpoints("web")
		return !found && n == 0, nil
	})
}

// TestServiceWithoutSelectorIsLeftToTheUser: Endpoints a user writes for a
// Service without a selector stay as written, and get no slices from the
// controller; the apiserver's own `kubernetes` Endpoints are not taken over.
func TestServiceWithoutSelectorIsLeftToTheUser(t *testing.T) {
	c := startForServices(t)
	ctx := context.Background()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "external-db", Namespace: ns},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "http", Port: 8080, Protocol: v1.ProtocolTCP}}}}
	if _, err := c.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "external-db", Namespace: ns},
		Subsets: []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "192.0.2.7"}}, Ports: []v1.EndpointPort{{Name: "http", Port: 8080, Protocol: v1.ProtocolTCP}}}}}
	if _, err := c.client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Service with a selector created afterwards is a marker: once its
	// Endpoints exist, the controller has been through the queue.
	marker := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "marker", Namespace: ns},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}}}}
	if _, err := c.client.CoreV1().Services(ns).Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the marker Service's Endpoints and slice", func() (bool, error) {
		_, _, found := c.endpointsIPs("marker")
		_, n := c.sliceEndpoints("marker")
		return found && n == 1, nil
	})
	got, err := c.client.CoreV1().Endpoints(ns).Get(ctx, "external-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Subsets) != 1 || len(got.Subsets[0].Addresses) != 1 || got.Subsets[0].Addresses[0].IP != "192.0.2.7" || got.Labels["endpoints.kubernetes.io/managed-by"] != "" {
		t.Errorf("user's Endpoints changed: %+v labels %v", got.Subsets, got.Labels)
	}
	if _, n := c.sliceEndpoints("external-db"); n != 0 {
		t.Errorf("%d controller slices for a Service without a selector", n)
	}
	if k, err := c.client.CoreV1().Endpoints(v1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil && k.Labels["endpoints.kubernetes.io/managed-by"] != "" {
		t.Errorf("the kubernetes Endpoints were taken over: labels %v", k.Labels)
	}
}

// TestRootCAConfigMapInEveryNamespace: kube-root-ca.crt with the CA the
// controller-manager trusts appears in a new namespace, comes back after a
// deletion and is restored after an edit.
func TestRootCAConfigMapInEveryNamespace(t *testing.T) {
	c := startForServices(t)
	ctx := context.Background()
	want := string(c.cfg.TLSClientConfig.CAData)
	if want == "" {
		t.Fatal("the test apiserver's client config has no CA data")
	}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	published := func() (bool, error) {
		cm, err := c.client.CoreV1().ConfigMaps("team").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return cm.Data["ca.crt"] == want && len(cm.Data) == 1 && cm.Annotations["kubernetes.io/description"] != "", nil
	}
	waitFor(t, "kube-root-ca.crt in a new namespace", published)
	waitFor(t, "kube-root-ca.crt in default", func() (bool, error) {
		_, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	})

	if err := c.client.CoreV1().ConfigMaps("team").Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-root-ca.crt back after its deletion", published)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := c.client.CoreV1().ConfigMaps("team").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["ca.crt"] = "tampered"
		_, err = c.client.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-root-ca.crt restored after an edit", published)
}
