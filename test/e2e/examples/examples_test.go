//go:build e2e

// Package examples applies every manifest of examples/ to a cluster started
// by hack/up.sh (what `make up` runs), checks that each reaches the state
// docs/walkthrough.md shows, then runs hack/down.sh and checks that nothing
// of the cluster is left on the host. It needs root.
package examples

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

const (
	nodeName = "examples-node"
	// clusterCIDR is this test's own, so that its masquerade rules can be
	// told apart from those of other clusters on the host.
	clusterCIDR = "10.214.0.0/16"
	cidrPrefix  = "10.214."
	// serviceCIDR and proxyTable are this test's own too: hack/down.sh must
	// remove the proxy's table and its routes for the range.
	serviceCIDR = "10.216.0.0/16"
	proxyTable  = "kube-lite-examples"
	// hack/up.sh names the bridge and uses the components' default ports.
	bridge = "kube-lite0"
)

var fixedPorts = []int{10248, 10249, 10250, 10256, 10257, 10259}

// cluster is one hack/up.sh cluster in its own KUBE_LITE_DIR.
type cluster struct {
	dir    string
	binDir string
	env    []string
	cs     kubernetes.Interface
}

func (c *cluster) run(name string, args ...string) (string, error) {
	return e2eutil.RunWithEnv(c.env, name, args...)
}

func (c *cluster) kubectl(args ...string) (string, error) {
	return c.run(filepath.Join(c.binDir, "kubectl-lite"), args...)
}

func (c *cluster) logTails(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("---- %s (last 30 lines) ----\n%s", filepath.Base(l), e2eutil.LastLines(string(b), 30))
	}
}

func portBusy(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// startCluster runs hack/up.sh and registers hack/down.sh, followed by the
// checks that the host is left as it was found.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the examples e2e test needs root (hack/up.sh runs containerd, runc, CNI, mounts)")
	}
	for _, p := range fixedPorts {
		if portBusy(p) {
			t.Skipf("port %d is taken: hack/up.sh's scheduler, controller-manager and kubelet use fixed ports", p)
		}
	}
	if exec.Command("ip", "link", "show", bridge).Run() == nil {
		t.Skipf("bridge %s exists: another hack/up.sh cluster runs on this host", bridge)
	}
	// A short path: containerd's socket ends up under it.
	dir, err := os.MkdirTemp("", "kl-ex-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{dir: dir, binDir: filepath.Join(dir, "bin")}
	started := false
	t.Cleanup(func() {
		if !started {
			os.RemoveAll(dir)
			return
		}
		if t.Failed() {
			c.logTails(t)
		}
		if out, err := c.run("hack/down.sh"); err != nil {
			t.Errorf("hack/down.sh: %v\n%s", err, out)
		}
		if left := e2eutil.Leftovers(dir); len(left) > 0 {
			t.Errorf("after hack/down.sh, still on the host:\n%s", strings.Join(left, "\n"))
		}
		if rules := e2eutil.NATRulesFor(cidrPrefix); len(rules) > 0 {
			t.Errorf("after hack/down.sh, NAT rules for %s are left:\n%s", clusterCIDR, strings.Join(rules, "\n"))
		}
		if exec.Command("ip", "link", "show", bridge).Run() == nil {
			t.Errorf("after hack/down.sh, bridge %s is left", bridge)
		}
		if exec.Command("nft", "list", "table", "ip", proxyTable).Run() == nil {
			t.Errorf("after hack/down.sh, kube-lite-proxy's nftables table %s is left", proxyTable)
		}
		if out, _ := exec.Command("ip", "route", "show", "table", "all", serviceCIDR).Output(); len(out) > 0 {
			t.Errorf("after hack/down.sh, routes for the service range %s are left:\n%s", serviceCIDR, out)
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	c.env = []string{"KUBE_LITE_DIR=" + dir, "KUBE_LITE_PORT=" + strconv.Itoa(e2eutil.MustFreePort(t)),
		"KUBE_LITE_NODE=" + nodeName, "KUBE_LITE_CLUSTER_CIDR=" + clusterCIDR, "KUBE_LITE_SERVICE_CIDR=" + serviceCIDR,
		"KUBE_LITE_PROXY_TABLE=" + proxyTable, "BIN=" + c.binDir}
	if out, err := c.run("hack/containerd.sh", "install"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := e2eutil.BuildBinaries(c.binDir, "./cmd/kube-lite-apiserver", "./cmd/kube-lite-scheduler",
		"./cmd/kube-lite-controller-manager", "./cmd/kube-lite-kubelet", "./cmd/kube-lite-proxy", "./cmd/kube-lite-pki", "./cmd/kubectl-lite"); err != nil {
		t.Fatal(err)
	}

	started = true
	out, err := c.run("hack/up.sh")
	if err != nil {
		t.Fatalf("hack/up.sh: %v", err)
	}
	t.Logf("hack/up.sh:\n%s", out)
	kubeconfig := filepath.Join(dir, "pki", "admin.kubeconfig")
	c.env = append(c.env, "KUBECONFIG="+kubeconfig)
	if c.cs, err = e2eutil.Clientset(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitJobFinished waits until job name is Complete or Failed.
func (c *cluster) waitJobFinished(ctx context.Context, name string) (*batchv1.Job, error) {
	var j *batchv1.Job
	err := e2eutil.Eventually(ctx, "job "+name+" finished", func(ctx context.Context) (bool, error) {
		var err error
		j, err = c.cs.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range j.Status.Conditions {
			if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return j, err
}

func TestExamples(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	pods := c.cs.CoreV1().Pods("default")

	tests := []struct {
		file string
		// created is what `kubectl-lite apply` must report.
		created []string
		check   func(t *testing.T)
	}{
		{
			file:    "examples/pod.yaml",
			created: []string{"pod/testapp created"},
			check: func(t *testing.T) {
				err := e2eutil.Eventually(ctx, "pod testapp Running and Ready", func(ctx context.Context) (bool, error) {
					p, err := pods.Get(ctx, "testapp", metav1.GetOptions{})
					return err == nil && p.Status.Phase == corev1.PodRunning && e2eutil.PodReady(p), nil
				})
				if err != nil {
					t.Fatal(err)
				}
				out, err := c.kubectl("logs", "testapp")
				if err != nil || !strings.Contains(out, "testapp listening") {
					t.Errorf("kubectl-lite logs testapp = %q, %v; want the listening line", out, err)
				}
			},
		},
		{
			file:    "examples/deployment.yaml",
			created: []string{"deployment.apps/testapp created"},
			check: func(t *testing.T) {
				var d *appsv1.Deployment
				err := e2eutil.Eventually(ctx, "deployment testapp 3/3 available", func(ctx context.Context) (bool, error) {
					var err error
					d, err = c.cs.AppsV1().Deployments("default").Get(ctx, "testapp", metav1.GetOptions{})
					return err == nil && d.Status.AvailableReplicas == 3 && d.Status.ReadyReplicas == 3, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=testapp-deploy"})
				if err != nil {
					t.Fatal(err)
				}
				ready := 0
				for i := range list.Items {
					p := &list.Items[i]
					if rp := p.Spec.Containers[0].ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/readyz" {
						t.Errorf("pod %s has readiness probe %+v, want GET /readyz", p.Name, rp)
					}
					if e2eutil.PodReady(p) && p.DeletionTimestamp == nil {
						ready++
					}
				}
				if ready != 3 {
					t.Errorf("%d ready pods of deployment testapp, want 3", ready)
				}
				out, err := c.kubectl("rollout", "status", "deployment/testapp", "--timeout=10s")
				if err != nil || !strings.Contains(out, `deployment "testapp" successfully rolled out`) {
					t.Errorf("kubectl-lite rollout status = %q, %v", out, err)
				}
			},
		},
		{
			file:    "examples/job.yaml",
			created: []string{"job.batch/sum created"},
			check: func(t *testing.T) {
				j, err := c.waitJobFinished(ctx, "sum")
				if err != nil {
					t.Fatal(err)
				}
				if j.Status.Succeeded != 3 || j.Status.Failed != 0 {
					t.Errorf("job sum: %d succeeded, %d failed; want 3 and 0 (conditions %+v)", j.Status.Succeeded, j.Status.Failed, j.Status.Conditions)
				}
				list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "job-name=sum"})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range list.Items {
					out, err := c.kubectl("logs", p.Name)
					if err != nil || out != "sum=5050\n" {
						t.Errorf("kubectl-lite logs %s = %q, %v; want %q", p.Name, out, err, "sum=5050\n")
					}
				}
			},
		},
		{
			file:    "examples/service.yaml",
			created: []string{"deployment.apps/web created", "service/web created", "job.batch/web-client created"},
			check:   func(t *testing.T) { c.checkService(ctx, t) },
		},
		{
			file:    "examples/volumes.yaml",
			created: []string{"configmap/volumes-config created", "secret/volumes-secret created", "pod/volumes created"},
			check: func(t *testing.T) {
				err := e2eutil.Eventually(ctx, "pod volumes Ready", func(ctx context.Context) (bool, error) {
					p, err := pods.Get(ctx, "volumes", metav1.GetOptions{})
					return err == nil && e2eutil.PodReady(p), nil
				})
				if err != nil {
					t.Fatal(err)
				}
				want := "config: hello from a configMap\nsecret: s3cr3t\nscratch: scratch written at start\n"
				var out string
				var logErr error
				// The container prints its three lines right after it starts;
				// Ready can be seen a moment before the last one is written.
				err = e2eutil.Eventually(ctx, "volume contents in the log", func(context.Context) (bool, error) {
					out, logErr = c.kubectl("logs", "volumes")
					return logErr == nil && out == want, nil
				})
				if err != nil {
					t.Errorf("kubectl-lite logs volumes = %q (%v), want %q: %v", out, logErr, want, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			out, err := c.kubectl("apply", "-f", tt.file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, want := range tt.created {
				if !slices.Contains(lines, want) {
					t.Errorf("kubectl-lite apply -f %s printed %q, want a line %q", tt.file, out, want)
				}
			}
			tt.check(t)
		})
	}

	t.Run("delete every example", func(t *testing.T) {
		for _, tt := range tests {
			if out, err := c.kubectl("delete", "-f", tt.file); err != nil {
				t.Errorf("kubectl-lite delete -f %s: %v\n%s", tt.file, err, out)
			}
		}
		err := e2eutil.Eventually(ctx, "no pods left", func(ctx context.Context) (bool, error) {
			list, err := pods.List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, nil
		})
		if err != nil {
			t.Error(err)
		}
	})

	// make down must also tear down what still runs: leave one pod up.
	t.Run("a pod left running for make down", func(t *testing.T) {
		if out, err := c.kubectl("apply", "-f", "examples/pod.yaml"); err != nil {
			t.Fatalf("kubectl-lite apply: %v\n%s", err, out)
		}
		err := e2eutil.Eventually(ctx, "pod testapp running", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "testapp", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
