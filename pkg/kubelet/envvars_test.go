package kubelet

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func env(kv ...string) []v1.EnvVar {
	var out []v1.EnvVar
	for i := 0; i < len(kv); i += 2 {
		out = append(out, v1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

// The variables are upstream's envvars.FromServices for the Services a
// pod sees: its namespace's with enableServiceLinks, default/kubernetes
// always.
func TestServiceEnvVars(t *testing.T) {
	api := service("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})
	apiVars := env(
		"KUBERNETES_SERVICE_HOST", "10.96.0.1",
		"KUBERNETES_SERVICE_PORT", "443",
		"KUBERNETES_SERVICE_PORT_HTTPS", "443",
		"KUBERNETES_PORT", "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO", "tcp",
		"KUBERNETES_PORT_443_TCP_PORT", "443",
		"KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1",
	)
	dns := service("team", "kube-dns", "10.96.0.10",
		v1.ServicePort{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP},
		v1.ServicePort{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP})
	dnsVars := env(
		"KUBE_DNS_SERVICE_HOST", "10.96.0.10",
		"KUBE_DNS_SERVICE_PORT", "53",
		"KUBE_DNS_SERVICE_PORT_DNS", "53",
		"KUBE_DNS_SERVICE_PORT_DNS_TCP", "53",
		"KUBE_DNS_PORT", "udp://10.96.0.10:53",
		"KUBE_DNS_PORT_53_UDP", "udp://10.96.0.10:53",
		"KUBE_DNS_PORT_53_UDP_PROTO", "udp",
		"KUBE_DNS_PORT_53_UDP_PORT", "53",
		"KUBE_DNS_PORT_53_UDP_ADDR", "10.96.0.10",
		"KUBE_DNS_PORT_53_TCP", "tcp://10.96.0.10:53",
		"KUBE_DNS_PORT_53_TCP_PROTO", "tcp",
		"KUBE_DNS_PORT_53_TCP_PORT", "53",
		"KUBE_DNS_PORT_53_TCP_ADDR", "10.96.0.10",
	)
	// An unnamed single port without a protocol is TCP.
	web := service("team", "web", "10.96.5.5", v1.ServicePort{Port: 80})
	webVars := env(
		"WEB_SERVICE_HOST", "10.96.5.5",
		"WEB_SERVICE_PORT", "80",
		"WEB_PORT", "tcp://10.96.5.5:80",
		"WEB_PORT_80_TCP", "tcp://10.96.5.5:80",
		"WEB_PORT_80_TCP_PROTO", "tcp",
		"WEB_PORT_80_TCP_PORT", "80",
		"WEB_PORT_80_TCP_ADDR", "10.96.5.5",
	)
	headless := service("team", "db", v1.ClusterIPNone, v1.ServicePort{Port: 5432})
	pending := service("team", "new", "", v1.ServicePort{Port: 5432})
	elsewhere := service("other", "web2", "10.96.7.7", v1.ServicePort{Port: 80})
	ownAPI := service("team", "kubernetes", "10.96.9.9", v1.ServicePort{Port: 8443})
	tests := []struct {
		name     string
		services []*v1.Service
		ns       string
		links    bool
		want     []v1.EnvVar
	}{
		{"namespace's services in name order, then none other", []*v1.Service{web, elsewhere, dns, api, headless, pending}, "team", true,
			slices.Concat(dnsVars, apiVars, webVars)},
		{"without links only the API's", []*v1.Service{web, dns, api}, "team", false, apiVars},
		{"the API's in its own namespace", []*v1.Service{api, web}, "default", false, apiVars},
		{"the namespace's own kubernetes wins", []*v1.Service{api, ownAPI}, "team", true, env(
			"KUBERNETES_SERVICE_HOST", "10.96.9.9",
			"KUBERNETES_SERVICE_PORT", "8443",
			"KUBERNETES_PORT", "tcp://10.96.9.9:8443",
			"KUBERNETES_PORT_8443_TCP", "tcp://10.96.9.9:8443",
			"KUBERNETES_PORT_8443_TCP_PROTO", "tcp",
			"KUBERNETES_PORT_8443_TCP_PORT", "8443",
			"KUBERNETES_PORT_8443_TCP_ADDR", "10.96.9.9",
		)},
		{"no API service yet", []*v1.Service{headless}, "team", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := serviceEnvVars(tt.services, tt.ns, tt.links)
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// A container gets its namespace's Service variables after its own, which
// override them and can refer to them; until the kubelet has read the
// Services once, no container is created.
func TestContainerGetsServiceVariables(t *testing.T) {
	h := newHarness(t)
	synced := false
	h.kl.servicesSynced = func() bool { return synced }
	store := h.kl.factory.Core().V1().Services().Informer().GetStore()
	for _, s := range []*v1.Service{
		service("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443}),
		service("default", "web", "10.96.5.5", v1.ServicePort{Port: 80}),
	} {
		if err := store.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	pod := testPod("svcenv", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = env("WEB_SERVICE_PORT", "8080", "URL", "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)")
	})
	h.add(pod)
	h.sync(pod)
	if h.running(pod, "main") != nil {
		t.Fatal("a container started before the Services were read")
	}
	if w := h.status(pod).ContainerStatuses[0].State.Waiting; w == nil || w.Message != errServicesNotRead.Error() {
		t.Fatalf("waiting %+v, want %q", w, errServicesNotRead)
	}
	synced = true
	h.sync(pod)
	c := h.running(pod, "main")
	if c == nil {
		t.Fatalf("not running: %+v", h.status(pod).ContainerStatuses[0].State)
	}
	got := map[string]string{}
	var order []string
	for _, kv := range h.rt.Config(c.Id).Envs {
		got[kv.Key] = string(kv.Value)
		order = append(order, kv.Key)
	}
	for k, v := range map[string]string{
		"WEB_SERVICE_PORT":        "8080",
		"URL":                     "http://10.96.5.5:8080",
		"WEB_SERVICE_HOST":        "10.96.5.5",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1",
		"KUBERNETES_SERVICE_PORT": "443",
	} {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if len(order) < 2 || order[0] != "WEB_SERVICE_PORT" || order[1] != "URL" {
		t.Errorf("env order %v: the container's own first", order)
	}

	// enableServiceLinks: false leaves only the API's.
	pod2 := testPod("nolinks", func(p *v1.Pod) { p.Spec.EnableServiceLinks = ptr.To(false) })
	h.add(pod2)
	h.sync(pod2)
	c2 := h.running(pod2, "main")
	if c2 == nil {
		t.Fatal("not running")
	}
	for _, kv := range h.rt.Config(c2.Id).Envs {
		if kv.Key == "WEB_SERVICE_HOST" {
			t.Errorf("WEB_SERVICE_HOST set without enableServiceLinks")
		}
	}
}
