package nodeipam

import (
	"context"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

func TestCIDRSet(t *testing.T) {
	tests := []struct {
		cluster string
		mask    int
		i       int
		want    string
	}{
		{"10.244.0.0/16", 24, 0, "10.244.0.0/24"},
		{"10.244.0.0/16", 24, 255, "10.244.255.0/24"},
		{"10.0.0.0/8", 26, 5, "10.0.1.64/26"},
		{"fd00::/48", 64, 3, "fd00:0:0:3::/64"},
	}
	for _, tt := range tests {
		_, cluster, _ := net.ParseCIDR(tt.cluster)
		s, err := newCIDRSet(cluster, tt.mask)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.subnet(tt.i).String(); got != tt.want {
			t.Errorf("%s /%d #%d = %s, want %s", tt.cluster, tt.mask, tt.i, got, tt.want)
		}
		if i, ok := s.index(tt.want); !ok || i != tt.i {
			t.Errorf("index(%s) = %d %v, want %d", tt.want, i, ok, tt.i)
		}
	}
}

func node(name, cidr string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
}

func TestAllocatesFreeCIDRsOnly(t *testing.T) {
	ctx := context.Background()
	objs := []*corev1.Node{node("a", "10.244.0.0/24"), node("b", ""), node("c", ""), node("d", "10.244.2.0/24")}
	client := controllertest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	for _, n := range objs {
		_, _ = client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		_ = f.Core().V1().Nodes().Informer().GetIndexer().Add(n)
	}
	c, err := New(client, f.Core().V1().Nodes(), "10.244.0.0/22", 24, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The cache does not see the first allocation before the second.
	for _, name := range []string{"b", "c"} {
		if err := c.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	got := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d"} {
		n, _ := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		got[name] = n.Spec.PodCIDR
	}
	want := map[string]string{"a": "10.244.0.0/24", "b": "10.244.1.0/24", "c": "10.244.3.0/24", "d": "10.244.2.0/24"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("node %s podCIDR %q, want %q", k, got[k], v)
		}
	}
	// The range is full now.
	e := node("e", "")
	_ = f.Core().V1().Nodes().Informer().GetIndexer().Add(e)
	if err := c.sync(ctx, "e"); err == nil {
		t.Error("allocated a fifth /24 out of a /22")
	}
	// Deleting a node frees its CIDR for the next.
	_ = f.Core().V1().Nodes().Informer().GetIndexer().Delete(node("a", "10.244.0.0/24"))
	_, _ = client.CoreV1().Nodes().Create(ctx, e, metav1.CreateOptions{})
	if err := c.sync(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	if n, _ := client.CoreV1().Nodes().Get(ctx, "e", metav1.GetOptions{}); n.Spec.PodCIDR != "10.244.0.0/24" {
		t.Errorf("node e got %q, want the released 10.244.0.0/24", n.Spec.PodCIDR)
	}
}
