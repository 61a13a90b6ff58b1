//go:build e2e

package examples

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

var serviceRange = netip.MustParsePrefix(serviceCIDR)

var hostnameRE = regexp.MustCompile(`hostname=(\S+)`)

// httpClient talks to one address per request: no keep-alive, so that every
// request is a new connection the proxy balances anew.
var httpClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// hostnameAt answers which testapp replica served GET http://addr/.
func hostnameAt(addr string) (string, error) {
	resp, err := httpClient.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	m := hostnameRE.FindStringSubmatch(string(b))
	if m == nil {
		return "", fmt.Errorf("GET http://%s/ answered %q, no hostname", addr, b)
	}
	return m[1], nil
}

// hostnamesAt makes n requests to addr and counts who answered.
func hostnamesAt(addr string, n int) (map[string]int, error) {
	seen := map[string]int{}
	for range n {
		h, err := hostnameAt(addr)
		if err != nil {
			return seen, err
		}
		seen[h]++
	}
	return seen, nil
}

// checkService is the examples/service.yaml check: the Service gets its
// addresses, its endpoints follow the ready replicas, and the replicas are
// reached through the cluster IP, the node port and the DNS name.
func (c *cluster) checkService(ctx context.Context, t *testing.T) {
	svcs := c.cs.CoreV1().Services("default")
	pods := c.cs.CoreV1().Pods("default")
	err := e2eutil.Eventually(ctx, "deployment web 3/3 available", func(ctx context.Context) (bool, error) {
		d, err := c.cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := svcs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !serviceRange.Contains(ip) {
		t.Fatalf("service web has cluster IP %q, want one in %s", svc.Spec.ClusterIP, serviceRange)
	}
	nodePort := svc.Spec.Ports[0].NodePort
	if nodePort < 30000 || nodePort > 32767 {
		t.Fatalf("service web has node port %d, want one in 30000-32767", nodePort)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	replicas := map[string]string{} // hostname (the pod's name) → pod IP
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			replicas[p.Name] = p.Status.PodIP
		}
	}
	if len(replicas) != 3 {
		t.Fatalf("%d live pods of deployment web, want 3: %v", len(replicas), replicas)
	}
	ips := sets.New[string]()
	for _, ip := range replicas {
		ips.Insert(ip)
	}
	clusterAddr := net.JoinHostPort(svc.Spec.ClusterIP, "80")

	t.Run("endpoints and endpoint slices list the ready replicas", func(t *testing.T) {
		if err := c.waitEndpoints(ctx, "web", ips, sets.New[string]()); err != nil {
			t.Fatal(err)
		}
		out, err := c.kubectl("get", "endpoints", "web")
		if err != nil || !strings.Contains(out, "ENDPOINTS") || !strings.Contains(out, ":8080") {
			t.Errorf("kubectl-lite get endpoints web = %q, %v", out, err)
		}
	})

	t.Run("the cluster IP spreads connections from the node over every replica", func(t *testing.T) {
		var seen map[string]int
		var lastErr error
		err := e2eutil.Eventually(ctx, "all 3 replicas answer on "+clusterAddr, func(context.Context) (bool, error) {
			seen, lastErr = hostnamesAt(clusterAddr, 30)
			return lastErr == nil && len(seen) == 3, nil
		})
		if err != nil {
			t.Fatalf("%v (last: %v, %v)", err, seen, lastErr)
		}
		for h := range seen {
			if _, ok := replicas[h]; !ok {
				t.Errorf("%s answered on %s, which is not a replica of web", h, clusterAddr)
			}
		}
	})

	t.Run("a pod finds the Service by name and reaches the API as kubernetes.default.svc", func(t *testing.T) {
		// The client started with the Deployment and may have finished
		// before every replica was ready: run it again now that all are, as
		// a user would.
		if out, err := c.kubectl("delete", "job", "web-client", "--wait"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if out, err := c.kubectl("apply", "-f", "examples/service.yaml"); err != nil || !strings.Contains(out, "job.batch/web-client created") {
			t.Fatalf("kubectl-lite apply again = %q, %v; want the Job created again", out, err)
		}
		if _, err := c.waitJobFinished(ctx, "web-client"); err != nil {
			t.Fatal(err)
		}
		out, err := c.kubectl("logs", "job/web-client")
		if err != nil {
			t.Fatal(err)
		}
		seen := sets.New[string]()
		for _, m := range hostnameRE.FindAllStringSubmatch(out, -1) {
			seen.Insert(m[1])
		}
		if want := sets.KeySet(replicas); !seen.Equal(want) {
			t.Errorf("the client pod was answered by %v, want every replica %v; its log:\n%s", sets.List(seen), sets.List(want), out)
		}
		if !strings.HasSuffix(out, "\nok\n") {
			t.Errorf("the client pod's log does not end with the API's %q from https://kubernetes.default.svc/livez:\n%s", "ok", out)
		}
	})

	t.Run("the node port answers on the node's address", func(t *testing.T) {
		node, err := c.cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var nodeIP string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				nodeIP = a.Address
			}
		}
		addr := net.JoinHostPort(nodeIP, strconv.Itoa(int(nodePort)))
		var h string
		var lastErr error
		err = e2eutil.Eventually(ctx, "a replica answers on "+addr, func(context.Context) (bool, error) {
			h, lastErr = hostnameAt(addr)
			return lastErr == nil, nil
		})
		if err != nil {
			t.Fatalf("%v (last error %v)", err, lastErr)
		}
		if _, ok := replicas[h]; !ok {
			t.Errorf("%s answered on %s, which is not a replica of web", h, addr)
		}
	})

	t.Run("a replica that turns unready leaves the endpoints and gets no traffic", func(t *testing.T) {
		var name, podIP string
		for name, podIP = range replicas {
			break
		}
		toggle := func() {
			t.Helper()
			if _, err := httpClient.Get("http://" + net.JoinHostPort(podIP, "8080") + "/toggle-ready"); err != nil {
				t.Fatal(err)
			}
		}
		toggle()
		if err := c.waitEndpoints(ctx, "web", ips.Clone().Delete(podIP), sets.New(podIP)); err != nil {
			t.Fatal(err)
		}
		var seen map[string]int
		err := e2eutil.Eventually(ctx, "only the 2 ready replicas answer", func(context.Context) (bool, error) {
			var err error
			seen, err = hostnamesAt(clusterAddr, 30)
			return err == nil && len(seen) == 2 && seen[name] == 0, nil
		})
		if err != nil {
			t.Errorf("%v: %s is unready, and %v answered", err, name, seen)
		}
		toggle()
		if err := c.waitEndpoints(ctx, "web", ips, sets.New[string]()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ClientIP session affinity keeps a client on one replica", func(t *testing.T) {
		patch := []byte(`{"spec":{"sessionAffinity":"ClientIP"}}`)
		if _, err := svcs.Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var seen map[string]int
		err := e2eutil.Eventually(ctx, "20 requests answered by one replica", func(context.Context) (bool, error) {
			var err error
			seen, err = hostnamesAt(clusterAddr, 20)
			return err == nil && len(seen) == 1, nil
		})
		if err != nil {
			t.Errorf("%v: %v answered", err, seen)
		}
		patch = []byte(`{"spec":{"sessionAffinity":"None"}}`)
		if _, err := svcs.Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a Service without endpoints refuses at once", func(t *testing.T) {
		empty := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "nobody-home"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "nobody-home"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: e2eutil.IntOrString(8080)}},
		}}
		empty, err := svcs.Create(ctx, empty, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer svcs.Delete(context.WithoutCancel(ctx), empty.Name, metav1.DeleteOptions{})
		addr := net.JoinHostPort(empty.Spec.ClusterIP, "80")
		var dialErr error
		err = e2eutil.Eventually(ctx, addr+" refuses connections", func(context.Context) (bool, error) {
			var conn net.Conn
			conn, dialErr = net.DialTimeout("tcp", addr, 5*time.Second)
			if conn != nil {
				conn.Close()
			}
			return errors.Is(dialErr, syscall.ECONNREFUSED), nil
		})
		if err != nil {
			t.Errorf("%v (last: %v)", err, dialErr)
		}
	})

	t.Run("cluster IPs keep working after the proxy and the apiserver restart", func(t *testing.T) {
		for _, name := range []string{"proxy", "apiserver"} {
			if err := c.kill(name); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := c.run("hack/up.sh"); err != nil {
			t.Fatalf("hack/up.sh again: %v\n%s", err, out)
		}
		again, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if again.Spec.ClusterIP != svc.Spec.ClusterIP {
			t.Errorf("after the restarts service web has cluster IP %s, had %s", again.Spec.ClusterIP, svc.Spec.ClusterIP)
		}
		var seen map[string]int
		err = e2eutil.Eventually(ctx, "all 3 replicas answer on "+clusterAddr+" again", func(context.Context) (bool, error) {
			var err error
			seen, err = hostnamesAt(clusterAddr, 30)
			return err == nil && len(seen) == 3, nil
		})
		if err != nil {
			t.Errorf("%v (last: %v)", err, seen)
		}
	})
}

// waitEndpoints waits until the Endpoints and the EndpointSlices of service
// name list exactly ready and notReady as its ready and unready addresses.
func (c *cluster) waitEndpoints(ctx context.Context, name string, ready, notReady sets.Set[string]) error {
	var last string
	err := e2eutil.Eventually(ctx, "endpoints of "+name, func(ctx context.Context) (bool, error) {
		ep, err := c.cs.CoreV1().Endpoints("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		epReady, epNotReady := sets.New[string](), sets.New[string]()
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				epReady.Insert(a.IP)
			}
			for _, a := range s.NotReadyAddresses {
				epNotReady.Insert(a.IP)
			}
		}
		slices, err := c.cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		sliceReady, sliceNotReady := sets.New[string](), sets.New[string]()
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					sliceReady.Insert(e.Addresses...)
				} else {
					sliceNotReady.Insert(e.Addresses...)
				}
			}
		}
		last = fmt.Sprintf("endpoints ready %v not ready %v; slices ready %v not ready %v",
			sets.List(epReady), sets.List(epNotReady), sets.List(sliceReady), sets.List(sliceNotReady))
		return epReady.Equal(ready) && epNotReady.Equal(notReady) && sliceReady.Equal(ready) && sliceNotReady.Equal(notReady), nil
	})
	if err != nil {
		return fmt.Errorf("%w: want ready %v, not ready %v; have %s", err, sets.List(ready), sets.List(notReady), last)
	}
	return nil
}

// kill stops one of hack/up.sh's processes at once, as a crash would.
func (c *cluster) kill(name string) error {
	b, err := os.ReadFile(filepath.Join(c.dir, "run", name+".pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	for range 100 {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s (pid %d) still runs after SIGKILL", name, pid)
}
