// Command podstart measures pod start latency on one real node: the time
// from creating a pod to seeing it Running through a watch, with the real
// apiserver, scheduler and kubelet processes, a private containerd, runc
// and CNI on this host, and the image already present. Beside it, the raw
// CRI floor: RunPodSandbox + CreateContainer + StartContainer straight to
// containerd. Needs root.
//
//	go run ./test/bench/podstart -n 20
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/cri"
)

const (
	nodeName = "bench-node"
	podCIDR  = "10.244.88.0/24"
	bridge   = "kl-bench0"
	image    = "kube-lite.local/busybox:1.35"
	ns       = "default"
)

type bench struct {
	root, binDir, imageDir, ctrDir, sock string
	kubeletPort                          int
	cs                                   kubernetes.Interface
	procs                                []*exec.Cmd
}

func main() {
	n := flag.Int("n", 20, "pods per scenario")
	binDir := flag.String("bin", "", "directory with kube-lite-apiserver, -scheduler and -kubelet (default: build them)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "podstart: needs root (containerd, runc, CNI)")
		os.Exit(2)
	}
	b := &bench{}
	err := b.run(*n, *binDir)
	b.stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "podstart:", err)
		os.Exit(1)
	}
}

func repoRoot() string {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "."
	}
	return strings.TrimSpace(string(out))
}

func sh(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (b *bench) stop() {
	for i := len(b.procs) - 1; i >= 0; i-- {
		p := b.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
		}
	}
	if b.ctrDir != "" {
		_, _ = sh("hack/containerd.sh", "stop", b.ctrDir)
		_, _ = sh("ip", "link", "del", bridge)
	}
	if b.root != "" {
		_ = os.RemoveAll(b.root)
	}
}

func (b *bench) start(logName, bin string, args ...string) error {
	log, err := os.Create(filepath.Join(b.root, logName))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(b.binDir, bin), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	b.procs = append(b.procs, cmd)
	return nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (b *bench) run(n int, binDir string) error {
	var err error
	if b.root, err = os.MkdirTemp("", "podstart-"); err != nil {
		return err
	}
	if _, err := sh("hack/containerd.sh", "install"); err != nil {
		return err
	}
	b.binDir = binDir
	if b.binDir == "" {
		b.binDir = filepath.Join(b.root, "bin")
		if _, err := sh("go", "build", "-o", b.binDir+"/", "./cmd/kube-lite-apiserver", "./cmd/kube-lite-scheduler", "./cmd/kube-lite-kubelet"); err != nil {
			return err
		}
	} else if b.binDir, err = filepath.Abs(b.binDir); err != nil {
		return err
	}
	b.imageDir = filepath.Join(b.root, "images")
	if _, err := sh("hack/images.sh", b.imageDir); err != nil {
		return err
	}
	b.ctrDir = filepath.Join(b.root, "containerd")
	out, err := sh("hack/containerd.sh", "start", b.ctrDir)
	if err != nil {
		return err
	}
	b.sock = strings.TrimSpace(out)

	port := freePort()
	tokens := filepath.Join(b.root, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token,admin,admin-uid,\"system:masters\"\nnode-token,system:node:"+nodeName+",node-uid,\"system:nodes\"\n"), 0o600); err != nil {
		return err
	}
	certDir := filepath.Join(b.root, "certs")
	if err := b.start("apiserver.log", "kube-lite-apiserver", "--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1",
		"--data-dir", filepath.Join(b.root, "etcd"), "--cert-dir", certDir, "--token-auth-file", tokens); err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	var ca []byte
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if ca, err = os.ReadFile(filepath.Join(certDir, "apiserver.crt")); err == nil && httpOK(server+"/readyz") {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("apiserver not ready")
		}
	}
	adminKC, nodeKC := filepath.Join(b.root, "admin.kubeconfig"), filepath.Join(b.root, "node.kubeconfig")
	for path, token := range map[string]string{adminKC: "admin-token", nodeKC: "node-token"} {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "c"
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			return err
		}
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", adminKC)
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = 1000, 2000
	if b.cs, err = kubernetes.NewForConfig(restCfg); err != nil {
		return err
	}
	if err := b.start("scheduler.log", "kube-lite-scheduler", "--kubeconfig", adminKC, "--leader-elect=false", "--bind-address", fmt.Sprintf("127.0.0.1:%d", freePort())); err != nil {
		return err
	}
	b.kubeletPort = freePort()
	if err := b.start("kubelet.log", "kube-lite-kubelet", "--kubeconfig", nodeKC, "--node-name", nodeName,
		"--container-runtime-endpoint", "unix://"+b.sock, "--root-dir", filepath.Join(b.root, "kubelet"),
		"--pod-cidr", podCIDR, "--image-dir", b.imageDir, "--cni-conf-dir", filepath.Join(b.ctrDir, "cni", "net.d"),
		"--cni-bridge", bridge, "--non-masquerade-cidr=", "--port", strconv.Itoa(b.kubeletPort), "--healthz-port", "0"); err != nil {
		return err
	}
	if err := b.waitNodeReady(); err != nil {
		log, _ := os.ReadFile(filepath.Join(b.root, "kubelet.log"))
		return fmt.Errorf("%w\n%s", err, log)
	}

	// The first pod after containerd starts pays one-off costs (CNI
	// plugins and shim binaries into the page cache); it is not measured.
	if _, err := b.scenario("warmup", 1, false); err != nil {
		return err
	}
	seq, err := b.scenario("seq", n, false)
	if err != nil {
		return err
	}
	par, err := b.scenario("par", n, true)
	if err != nil {
		return err
	}
	floor, err := b.criFloor(n, false)
	if err != nil {
		return err
	}
	floorPar, err := b.criFloor(n, true)
	if err != nil {
		return err
	}
	fmt.Printf("pod start, %d pods, image present, one node (%s):\n\n", n, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Println("| scenario | create→Running p50 | p99 | create→bound p50 | kubelet: sandbox | image check | create | start | rest (API, watch, status) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range []*result{seq, par} {
		fmt.Println(r.row())
	}
	fmt.Printf("\nraw CRI floor, %d sequential: sandbox p50 %s p99 %s; sandbox+create+start p50 %s p99 %s\n",
		n, ms(pct(floor.sandbox, 50)), ms(pct(floor.sandbox, 99)), ms(pct(floor.total, 50)), ms(pct(floor.total, 99)))
	fmt.Printf("raw CRI floor, %d at once: sandbox p50 %s p99 %s; sandbox+create+start p50 %s p99 %s\n",
		n, ms(pct(floorPar.sandbox, 50)), ms(pct(floorPar.sandbox, 99)), ms(pct(floorPar.total, 50)), ms(pct(floorPar.total, 99)))
	return nil
}

func httpOK(url string) bool {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (b *bench) waitNodeReady() error {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		node, err := b.cs.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				return nil
			}
		}
	}
	return errors.New("node not Ready")
}

type result struct {
	name          string
	running       []time.Duration
	bound         []time.Duration
	kubeletPerPod map[string]time.Duration
}

func (r *result) row() string {
	var kubelet time.Duration
	for _, d := range r.kubeletPerPod {
		kubelet += d
	}
	rest := pct(r.running, 50) - pct(r.bound, 50) - kubelet
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", r.name,
		ms(pct(r.running, 50)), ms(pct(r.running, 99)), ms(pct(r.bound, 50)),
		ms(r.kubeletPerPod["run_podsandbox"]), ms(r.kubeletPerPod["image_status"]),
		ms(r.kubeletPerPod["create_container"]), ms(r.kubeletPerPod["start_container"]), ms(rest))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// scenario creates n pods (one after another, or all at once) and times
// each from its create call to the watch showing it bound and Running.
func (b *bench) scenario(name string, n int, parallel bool) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := b.kubeletOps()
	if err != nil {
		return nil, err
	}
	w, err := b.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "bench=" + name})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	bound := map[string]time.Duration{}
	running := map[string]time.Duration{}
	allRunning := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			mu.Lock()
			start, ok := created[p.Name]
			if ok {
				if _, seen := bound[p.Name]; !seen && p.Spec.NodeName != "" {
					bound[p.Name] = now.Sub(start)
				}
				if _, seen := running[p.Name]; !seen && p.Status.Phase == v1.PodRunning {
					running[p.Name] = now.Sub(start)
					if len(running) == n {
						close(allRunning)
					}
				}
			}
			mu.Unlock()
		}
	}()
	create := func(i int) error {
		podName := fmt.Sprintf("%s-%d", name, i)
		zero := int64(0)
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName, Labels: map[string]string{"bench": name}},
			Spec: v1.PodSpec{
				TerminationGracePeriodSeconds: &zero,
				Containers:                    []v1.Container{{Name: "main", Image: image, Command: []string{"sleep", "3600"}, ImagePullPolicy: v1.PullIfNotPresent}},
			},
		}
		mu.Lock()
		created[podName] = time.Now()
		mu.Unlock()
		_, err := b.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	if parallel {
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			go func(i int) { errs <- create(i) }(i)
		}
		for i := 0; i < n; i++ {
			if err := <-errs; err != nil {
				return nil, err
			}
		}
	} else {
		for i := 0; i < n; i++ {
			if err := create(i); err != nil {
				return nil, err
			}
			for {
				mu.Lock()
				_, ok := running[fmt.Sprintf("%s-%d", name, i)]
				mu.Unlock()
				if ok {
					break
				}
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("%s: pod %d never ran", name, i)
				case <-time.After(2 * time.Millisecond):
				}
			}
		}
	}
	select {
	case <-allRunning:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: not all pods ran", name)
	}
	after, err := b.kubeletOps()
	if err != nil {
		return nil, err
	}
	r := &result{name: map[bool]string{false: "20 one after another", true: "20 at once"}[parallel], kubeletPerPod: map[string]time.Duration{}}
	if n != 20 {
		r.name = fmt.Sprintf("%d (%s)", n, map[bool]string{false: "sequential", true: "parallel"}[parallel])
	}
	for op, sum := range after {
		r.kubeletPerPod[op] = (sum - before[op]) / time.Duration(n)
	}
	mu.Lock()
	for _, d := range running {
		r.running = append(r.running, d)
	}
	for _, d := range bound {
		r.bound = append(r.bound, d)
	}
	mu.Unlock()
	// Clean up before the next scenario.
	zero := int64(0)
	if err := b.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: "bench=" + name}); err != nil {
		for i := 0; i < n; i++ {
			_ = b.cs.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("%s-%d", name, i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	for {
		list, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "bench=" + name})
		if err == nil && len(list.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: pods not deleted", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
	// A grace period of 0 removes the pods from the API at once; the
	// kubelet tears them down afterwards. The next scenario starts on a
	// quiet node, as the CRI floor does.
	if err := b.waitNoSandboxes(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// waitNoSandboxes waits until containerd holds no pod sandbox.
func (b *bench) waitNoSandboxes(ctx context.Context) error {
	rt, err := cri.Dial(b.sock)
	if err != nil {
		return err
	}
	defer rt.Close()
	for {
		sandboxes, err := rt.ListPodSandbox(ctx, nil)
		if err == nil && len(sandboxes) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("pod sandboxes left on the node")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kubeletOps reads the kubelet's summed runtime operation durations.
func (b *bench) kubeletOps() (map[string]time.Duration, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", b.kubeletPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, `kubelet_runtime_operations_duration_seconds_sum{operation_type="`)
		if !ok {
			continue
		}
		op, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		secs, err := strconv.ParseFloat(val, 64)
		if err == nil {
			out[op] = time.Duration(secs * float64(time.Second))
		}
	}
	return out, nil
}

type floorResult struct{ sandbox, total []time.Duration }

// criFloor is what containerd alone needs per pod, measured in the same
// run: RunPodSandbox (with CNI) + CreateContainer + StartContainer, one pod
// after another or all n at once (durations then count from the common start).
func (b *bench) criFloor(n int, parallel bool) (*floorResult, error) {
	rt, err := cri.Dial(b.sock)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	ctx := context.Background()
	var mu sync.Mutex
	res := &floorResult{}
	var sandboxes []string
	defer func() {
		for _, id := range sandboxes {
			_ = rt.StopPodSandbox(ctx, id)
			_ = rt.RemovePodSandbox(ctx, id)
		}
	}()
	onePod := func(i int, begin time.Time) error {
		uid := fmt.Sprintf("floor-%d-%d", time.Now().UnixNano(), i)
		logDir := filepath.Join(b.root, "floor-logs", uid)
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return err
		}
		sbCfg := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("floor-%d", i), Namespace: "bench", Uid: uid},
			Hostname:     fmt.Sprintf("floor-%d", i),
			LogDirectory: logDir,
			Linux:        &runtimeapi.LinuxPodSandboxConfig{},
		}
		id, err := rt.RunPodSandbox(ctx, sbCfg)
		if err != nil {
			return err
		}
		sb := time.Since(begin)
		mu.Lock()
		sandboxes = append(sandboxes, id)
		mu.Unlock()
		cid, err := rt.CreateContainer(ctx, id, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Command:  []string{"sleep", "3600"},
			LogPath:  "main.log",
			Linux:    &runtimeapi.LinuxContainerConfig{},
		}, sbCfg)
		if err != nil {
			return err
		}
		if err := rt.StartContainer(ctx, cid); err != nil {
			return err
		}
		mu.Lock()
		res.sandbox = append(res.sandbox, sb)
		res.total = append(res.total, time.Since(begin))
		mu.Unlock()
		return nil
	}
	if !parallel {
		for i := 0; i < n; i++ {
			if err := onePod(i, time.Now()); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	begin := time.Now()
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) { errs <- onePod(i, begin) }(i)
	}
	// Every pod is waited for, even after an error, so that the deferred
	// cleanup sees all the sandboxes that were made.
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return res, nil
}
