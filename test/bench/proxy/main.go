// Command proxy measures a node's Service proxy with 1,000 Services of 10
// endpoints each: how long its first full sync takes, and how long an
// EndpointSlice change takes to reach the node's nftables ruleset. It runs
// kube-lite-proxy and upstream's kube-proxy (nftables mode) one after the
// other against the same kube-lite apiserver, each in a fresh network
// namespace of its own, so that neither touches the host's ruleset and
// both start from an empty one. Run it as root from the repository root
// after `make build` (and hack/upstream-apiserver.sh for upstream):
//
//	go run ./test/bench/proxy -upstream .upstream/bin -rounds 2
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/test/bench/harness"
)

type options struct {
	apiserver string
	proxy     string
	// proxyFlags are added to kube-lite-proxy's, for experiments.
	proxyFlags string
	upstream   string
	services   int
	endpoints  int
	changes    int
	interval   time.Duration
	rounds     int
	// upstreamFirst starts round 1 with upstream; the order alternates.
	upstreamFirst bool
	settle        time.Duration
	keep          bool
}

func main() {
	var o options
	flag.StringVar(&o.apiserver, "apiserver", "bin/kube-lite-apiserver", "the kube-lite apiserver binary that serves the Services and EndpointSlices")
	flag.StringVar(&o.proxy, "proxy", "bin/kube-lite-proxy", "the kube-lite-proxy binary; empty measures upstream alone")
	flag.StringVar(&o.proxyFlags, "proxy-flags", "", "more flags for kube-lite-proxy, space-separated (e.g. \"--min-sync-period=0\")")
	flag.StringVar(&o.upstream, "upstream", "", "a directory with upstream's kube-proxy (hack/upstream-apiserver.sh builds it) to measure in the same run, in nftables mode")
	flag.IntVar(&o.services, "services", 1000, "ClusterIP Services, one port each")
	flag.IntVar(&o.endpoints, "endpoints", 10, "ready endpoints in each Service's EndpointSlice")
	flag.IntVar(&o.changes, "changes", 100, "EndpointSlice changes timed per proxy (one endpoint address replaced in one slice)")
	flag.DurationVar(&o.interval, "interval", 1100*time.Millisecond, "pause between one change reaching the ruleset and the next change; above both proxies' default minimum sync period (1s), so that each change gets a sync of its own, at once, in both")
	flag.IntVar(&o.rounds, "rounds", 1, "measure this many times, alternating which proxy goes first, and print the medians and ranges")
	flag.BoolVar(&o.upstreamFirst, "upstream-first", false, "start round 1 with upstream")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "how long a proxy idles after the changes before its idle RSS is read")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, kubeconfigs, etcd data)")
	flag.Parse()
	if o.rounds < 1 || o.services < 1 || o.endpoints < 1 || o.changes < 1 {
		fmt.Fprintln(os.Stderr, "proxy bench: -rounds, -services, -endpoints and -changes must be positive")
		os.Exit(2)
	}
	if o.services > 4*250 || o.endpoints > 250 {
		fmt.Fprintln(os.Stderr, "proxy bench: at most 1000 Services of 250 endpoints (the addresses the bench hands out)")
		os.Exit(2)
	}
	// Bounded: setup, then per proxy and round a start, the changes and
	// the settle, each with room to spare.
	perRun := 5*time.Minute + time.Duration(o.changes)*(o.interval+time.Second) + o.settle
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(2*o.rounds)*perRun)
	defer cancel()
	// An interrupt ends the run through its context, so that the deferred
	// cleanup (processes, namespaces, the directory) still happens.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "proxy bench: %v\n", err)
		cancel()
		os.Exit(1)
	}
}

// Addresses inside the namespaces the bench makes: the apiserver's
// namespace and each proxy's node are the two ends of a veth pair.
const (
	apiAddr    = "192.168.250.1"
	nodeAddr   = "192.168.250.2"
	apiPort    = 16443
	nodeName   = "bench-node"
	namespace  = "proxy-bench"
	podCIDR    = "10.244.0.0/16"
	serviceIPs = "10.96.0.0/16"
	// Each proxy listens on its own namespace's loopback, not the host's.
	healthzAddr = "127.0.0.1:20256"
	metricsAddr = "127.0.0.1:20249"
)

// proxyKind is one proxy the bench measures.
type proxyKind struct {
	name string
	bin  string
	args func(kubeconfig string) []string
}

func kubeLiteProxy(bin string, extra []string) proxyKind {
	return proxyKind{name: "kube-lite", bin: bin, args: func(kc string) []string {
		return append([]string{"--kubeconfig=" + kc, "--hostname-override=" + nodeName, "--cluster-cidr=" + podCIDR,
			"--service-cluster-ip-range=" + serviceIPs, "--healthz-bind-address=" + healthzAddr, "--metrics-bind-address=" + metricsAddr}, extra...)
	}}
}

// upstreamProxy runs kube-proxy as a node would, except that it leaves the
// conntrack sysctls alone: a namespace cannot set the global ones, and the
// bench measures rules, not connections.
func upstreamProxy(bin string) proxyKind {
	return proxyKind{name: "upstream", bin: bin, args: func(kc string) []string {
		return []string{"--proxy-mode=nftables", "--kubeconfig=" + kc, "--hostname-override=" + nodeName, "--cluster-cidr=" + podCIDR,
			"--healthz-bind-address=" + healthzAddr, "--metrics-bind-address=" + metricsAddr,
			"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
			"--conntrack-udp-timeout=0", "--conntrack-udp-timeout-stream=0"}
	}}
}

// bench is one run: the apiserver, its objects and the cleanup owed.
type bench struct {
	o        options
	dir      string
	tag      string // in every namespace name: this process's id
	apiNS    string
	client   kubernetes.Interface
	admin    *pki.KeyPair
	cleanups []func()

	clusterIPs  []string
	explicitIPs bool
	slices      []*discoveryv1.EndpointSlice
	nextAddr    int // endpoint addresses handed out by changes so far
	runs        int
}

func (b *bench) defer_(f func()) { b.cleanups = append(b.cleanups, f) }

func (b *bench) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

// result is one proxy's figures in one round.
type result struct {
	proxy string
	// startToRules: from the proxy's start to its ruleset holding every
	// Service's cluster IP (nft list ruleset, polled).
	startToRules time.Duration
	// firstSync is the duration of its first sync by its own histogram.
	firstSync time.Duration
	// nftFloor is the floor under a full sync: nft loading the proxy's own
	// complete ruleset, as listed, into an empty namespace in one
	// transaction (no rendering, no API), process start included.
	nftFloor time.Duration
	// changes: from an EndpointSlice update's response to the end of the
	// proxy's first sync whose ruleset holds the new address, sorted.
	changes []time.Duration
	// programming is its network programming histogram over the changes
	// (from the slices' last-change-trigger-time to the rules).
	programming histogram
	// syncs is its sync histogram over the changes.
	syncs         histogram
	peakRSS, idle float64
}

func run(ctx context.Context, o options, out io.Writer) (err error) {
	if os.Geteuid() != 0 {
		return errors.New("needs root (it makes network namespaces and runs the proxies in them)")
	}
	var kinds []proxyKind
	if o.proxy != "" {
		if _, err := os.Stat(o.proxy); err != nil {
			return fmt.Errorf("%w (make build builds it; -proxy '' measures upstream alone)", err)
		}
		bin, _ := filepath.Abs(o.proxy)
		kinds = append(kinds, kubeLiteProxy(bin, strings.Fields(o.proxyFlags)))
	}
	if o.upstream != "" {
		bin, _ := filepath.Abs(filepath.Join(o.upstream, "kube-proxy"))
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%w (hack/upstream-apiserver.sh builds upstream's kube-proxy)", err)
		}
		kinds = append(kinds, upstreamProxy(bin))
	}
	if len(kinds) == 0 {
		return errors.New("nothing to measure: -proxy and -upstream are both empty")
	}
	dir, err := os.MkdirTemp("", "kube-lite-bench-proxy-")
	if err != nil {
		return err
	}
	b := &bench{o: o, dir: dir, tag: strconv.Itoa(os.Getpid())}
	// The processes and namespaces go first, then the directory they
	// used, whatever happened; a failed run shows its logs' ends first.
	defer func() {
		b.cleanup()
		if o.keep {
			fmt.Fprintf(os.Stderr, "proxy bench: logs kept in %s\n", dir)
			return
		}
		if err != nil {
			printLogTails(os.Stderr, dir)
		}
		_ = os.RemoveAll(dir)
	}()

	fmt.Fprintf(out, "Service proxy benchmark: %d CPUs, %d Services × %d endpoints, %d changes (each %s after the last reached the ruleset), apiserver %s\n",
		runtime.NumCPU(), o.services, o.endpoints, o.changes, o.interval, o.apiserver)
	if err := b.startAPIServer(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.createObjects(ctx); err != nil {
		return err
	}
	how := "allocated by the apiserver"
	if b.explicitIPs {
		how = "set by the bench (the apiserver allocates none)"
	}
	fmt.Fprintf(out, "created %d Services and EndpointSlices in %.1f s; cluster IPs %s\n", o.services, time.Since(t0).Seconds(), how)

	var rounds [][]result
	for round := range o.rounds {
		order := slices.Clone(kinds)
		if o.upstreamFirst != (round%2 == 1) {
			slices.Reverse(order)
		}
		fmt.Fprintf(out, "\nround %d of %d\n", round+1, o.rounds)
		var rs []result
		for _, k := range order {
			r, err := b.measure(ctx, k)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, k.name, err)
			}
			rs = append(rs, r)
		}
		slices.SortFunc(rs, func(a, b result) int { return cmpName(a.proxy, b.proxy) })
		printRound(out, rs)
		rounds = append(rounds, rs)
	}
	if o.rounds > 1 {
		printSummary(out, rounds)
	}
	return nil
}

// cmpName puts kube-lite before upstream in every table.
func cmpName(a, b string) int {
	if a == b {
		return 0
	}
	if a == "kube-lite" {
		return -1
	}
	return 1
}

// startAPIServer runs the kube-lite apiserver in a namespace of its own,
// listening on all of that namespace's addresses: its loopback (this
// process dials it there) and the veth to each proxy's namespace.
func (b *bench) startAPIServer(ctx context.Context) error {
	bin, err := filepath.Abs(b.o.apiserver)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%w (run `make build` first)", err)
	}
	b.apiNS = "kube-lite-bench-" + b.tag + "-api"
	if err := addNetns(ctx, b.apiNS); err != nil {
		return err
	}
	b.defer_(func() { delNetns(b.apiNS) })
	caFile, admin, _, err := harness.Admin(b.dir)
	if err != nil {
		return err
	}
	b.admin = admin
	logPath := filepath.Join(b.dir, "apiserver.log")
	p, err := harness.StartProcess("ip", []string{"netns", "exec", b.apiNS, bin,
		"--bind-address=0.0.0.0", "--secure-port=" + strconv.Itoa(apiPort),
		"--data-dir=" + filepath.Join(b.dir, "etcd"), "--cert-dir=" + filepath.Join(b.dir, "certs"),
		"--client-ca-file=" + caFile}, logPath, nil)
	if err != nil {
		return err
	}
	b.defer_(p.Stop)
	cfg := &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(apiPort),
		// The server's certificate is self-signed for this run.
		TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: admin.CertPEM, KeyData: admin.KeyPEM},
		QPS:             -1,
		Dial:            netnsDialer(b.apiNS),
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: netnsDialer(b.apiNS),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // readiness probe of a self-signed server
	wait, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if body, err := scrape(wait, hc, cfg.Host+"/readyz"); err == nil && body != "" {
			break
		}
		select {
		case <-p.Exited:
			return errors.New("apiserver exited at start (its log: apiserver.log)")
		case <-wait.Done():
			return errors.New("apiserver not ready after 60s (its log: apiserver.log)")
		case <-time.After(100 * time.Millisecond):
		}
	}
	b.client, err = kubernetes.NewForConfig(cfg)
	return err
}

// createObjects makes the node the proxies run as, the Services and an
// EndpointSlice for each, written directly as the EndpointSlice controller
// would (no pods, no controller-manager).
func (b *bench) createObjects(ctx context.Context) error {
	c := b.client
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeAddr}, {Type: corev1.NodeHostName, Address: nodeName}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	// The apiserver allocates cluster IPs when it can; one that stores a
	// Service without is given explicit ones from the range.
	first, err := c.CoreV1().Services(namespace).Create(ctx, service(0, ""), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create service: %w", err)
	}
	explicit := first.Spec.ClusterIP == ""
	b.explicitIPs = explicit
	if explicit {
		if err := c.CoreV1().Services(namespace).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	b.clusterIPs = make([]string, b.o.services)
	b.slices = make([]*discoveryv1.EndpointSlice, b.o.services)
	return harness.Parallel(ctx, b.o.services, 16, func(i int) error {
		svc := first
		if i > 0 || explicit {
			ip := ""
			if explicit {
				ip = fmt.Sprintf("10.96.%d.%d", 4+i/250, i%250+1)
			}
			var err error
			if svc, err = c.CoreV1().Services(namespace).Create(ctx, service(i, ip), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create service %d: %w", i, err)
			}
		}
		b.clusterIPs[i] = svc.Spec.ClusterIP
		eps := make([]string, b.o.endpoints)
		for j := range eps {
			n := i*b.o.endpoints + j
			eps[j] = fmt.Sprintf("10.244.%d.%d", n/250, n%250+1)
		}
		s, err := c.DiscoveryV1().EndpointSlices(namespace).Create(ctx, endpointSlice(svc.Name, eps), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create endpointslice %d: %w", i, err)
		}
		b.slices[i] = s
		return nil
	})
}

func service(i int, clusterIP string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%04d", i), Namespace: namespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
}

func endpointSlice(svc string, addrs []string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: namespace,
			Labels:      map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "kube-lite-bench"},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}})
	}
	return s
}

// writeKubeconfig gives a proxy the bench's admin credential and the
// apiserver's address across the veth.
func (b *bench) writeKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://%s:%d", apiAddr, apiPort), InsecureSkipTLSVerify: true}
	cfg.AuthInfos["bench-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: b.admin.CertPEM, ClientKeyData: b.admin.KeyPEM}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench-admin"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}

// measure runs one proxy in a fresh namespace: its first full sync, then
// the changes one at a time, then its idle memory.
func (b *bench) measure(ctx context.Context, k proxyKind) (result, error) {
	b.runs++
	r := result{proxy: k.name}
	ns := fmt.Sprintf("kube-lite-bench-%s-%d", b.tag, b.runs)
	if err := addNetns(ctx, ns); err != nil {
		return r, err
	}
	defer delNetns(ns)
	// The kernel dismantles a deleted namespace in the background, so its
	// veth could outlive it for a moment: the apiserver's end is removed
	// here, at once, and has a name of its own anyway.
	apiDev := fmt.Sprintf("to-node-%d", b.runs)
	defer func() { _ = ip(context.Background(), "-n", b.apiNS, "link", "del", apiDev) }()
	if err := linkNetns(ctx, b.apiNS, apiDev, apiAddr+"/30", ns, "eth0", nodeAddr+"/30"); err != nil {
		return r, err
	}
	kc := filepath.Join(b.dir, fmt.Sprintf("%s-%d.kubeconfig", k.name, b.runs))
	if err := b.writeKubeconfig(kc); err != nil {
		return r, err
	}
	logPath := filepath.Join(b.dir, fmt.Sprintf("%s-%d.log", k.name, b.runs))
	start := time.Now()
	p, err := harness.StartProcess("ip", append([]string{"netns", "exec", ns, k.bin}, k.args(kc)...), logPath, nil)
	if err != nil {
		return r, err
	}
	// Stopped before its namespace goes (deferred above, so run after).
	defer p.Stop()
	failed := func(err error) (result, error) {
		return r, fmt.Errorf("%w (its log: %s)", err, filepath.Base(logPath))
	}

	// Its memory is sampled for the whole run; the peak is kept.
	var rssMu sync.Mutex
	var peak float64
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampling.Err() == nil {
			if v, err := harness.RSS(p.Pid()); err == nil {
				rssMu.Lock()
				peak = max(peak, v)
				rssMu.Unlock()
			}
			select {
			case <-sampling.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { stopSampling(); <-sampled }()

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: netnsDialer(ns)}}
	metricsURL := "http://" + metricsAddr + "/metrics"

	// (a) the full sync: polled through its metrics (cheap) and its
	// ruleset (an nft dump, costly with 1,000 Services, so listed at once
	// when the metrics report a sync and otherwise every 2 s).
	wait, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var synced bool
	var lastList time.Time
	for {
		select {
		case <-p.Exited:
			return failed(errors.New("proxy exited"))
		case <-wait.Done():
			return failed(fmt.Errorf("no complete ruleset within 5 minutes (sync reported: %v)", synced))
		default:
		}
		if !synced {
			if text, err := scrape(wait, hc, metricsURL); err == nil {
				if h, ok := parseHistogram(text, syncMetric); ok && h.count >= 1 {
					synced = true
					// Its first sync alone, unless another one was
					// over before this poll.
					r.firstSync = time.Duration(h.mean() * float64(time.Second))
				}
			}
		}
		if synced || time.Since(lastList) >= 2*time.Second {
			listed := time.Now()
			text, err := nftRuleset(wait, ns)
			lastList = time.Now()
			if err == nil && countPresent(text, b.clusterIPs) == len(b.clusterIPs) {
				r.startToRules = listed.Sub(start)
				if r.nftFloor, err = b.nftLoad(wait, text); err != nil {
					return failed(err)
				}
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	// (b) the changes, one at a time. Listing the ruleset takes a
	// noticeable share of a core with 1,000 Services and following it with
	// nft monitor makes the kernel describe every object a sync writes, so
	// neither runs while a proxy syncs: the bench polls the proxy's sync
	// counter (cheap), and each time it moves lists the ruleset once to see
	// whether the new address is in it.
	syncs := func() (float64, error) {
		text, err := scrape(ctx, hc, metricsURL)
		if err != nil {
			return 0, err
		}
		h, ok := parseHistogram(text, syncMetric)
		if !ok {
			return 0, fmt.Errorf("no %s in its metrics", syncMetric)
		}
		return h.count, nil
	}
	before, err := scrape(ctx, hc, metricsURL)
	if err != nil {
		return failed(fmt.Errorf("metrics: %w", err))
	}
	changed := map[int]bool{}
	for i := range b.o.changes {
		idx := (i * 337) % b.o.services // 337 and 1000 share no factor: spread over the slices
		changed[idx] = true
		addr := fmt.Sprintf("10.244.%d.%d", 100+b.nextAddr/250, b.nextAddr%250+1)
		b.nextAddr++
		s := b.slices[idx].DeepCopy()
		s.Endpoints[i%len(s.Endpoints)].Addresses = []string{addr}
		s.Annotations[corev1.EndpointsLastChangeTriggerTime] = time.Now().UTC().Format(time.RFC3339Nano)
		count, err := syncs()
		if err != nil {
			return failed(fmt.Errorf("metrics: %w", err))
		}
		updated, err := b.client.DiscoveryV1().EndpointSlices(namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return failed(fmt.Errorf("update endpointslice: %w", err))
		}
		wrote := time.Now()
		b.slices[idx] = updated
		seen, err := waitRules(ctx, ns, addr, count, syncs)
		if err != nil {
			return failed(fmt.Errorf("change %d: %w", i+1, err))
		}
		r.changes = append(r.changes, seen.Sub(wrote))
		if i < b.o.changes-1 {
			select {
			case <-ctx.Done():
				return r, ctx.Err()
			case <-time.After(time.Until(seen.Add(b.o.interval))):
			}
		}
	}
	slices.Sort(r.changes)
	after, err := scrape(ctx, hc, metricsURL)
	if err != nil {
		return failed(fmt.Errorf("metrics: %w", err))
	}
	h0, _ := parseHistogram(before, programmingMetric)
	h1, _ := parseHistogram(after, programmingMetric)
	r.programming = h1.sub(h0)
	s0, _ := parseHistogram(before, syncMetric)
	s1, _ := parseHistogram(after, syncMetric)
	r.syncs = s1.sub(s0)

	// Every address of every changed slice is in the ruleset now.
	text, err := nftRuleset(ctx, ns)
	if err != nil {
		return failed(err)
	}
	var want []string
	for idx := range changed {
		for _, e := range b.slices[idx].Endpoints {
			want = append(want, e.Addresses...)
		}
	}
	if n := countPresent(text, want); n != len(want) {
		return failed(fmt.Errorf("after the changes only %d of the %d endpoint addresses of the changed slices are in the ruleset", n, len(want)))
	}

	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(b.o.settle):
	}
	if r.idle, err = harness.RSS(p.Pid()); err != nil {
		return failed(err)
	}
	stopSampling()
	<-sampled
	r.peakRSS = max(peak, r.idle)
	return r, nil
}

// waitRules returns when the proxy's sync counter, count before the change,
// has moved and the ruleset then holds addr: the time the counter was seen
// moving, within the 20 ms the counter is polled at. A sync that ran
// before the change reached the proxy (its periodic resync) moves the
// counter without the address; the wait goes on to the next.
// nftLoad times nft loading ruleset into a fresh namespace of its own.
func (b *bench) nftLoad(ctx context.Context, ruleset string) (time.Duration, error) {
	b.runs++
	ns := fmt.Sprintf("kube-lite-bench-%s-%d-floor", b.tag, b.runs)
	if err := addNetns(ctx, ns); err != nil {
		return 0, err
	}
	defer delNetns(ns)
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("nft -f of the listed ruleset: %w: %s", err, out)
	}
	return time.Since(start), nil
}

func waitRules(ctx context.Context, ns, addr string, count float64, syncs func() (float64, error)) (time.Time, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := syncs()
		if err != nil {
			return time.Time{}, fmt.Errorf("metrics: %w", err)
		}
		if c > count {
			at := time.Now()
			count = c
			text, err := nftRuleset(ctx, ns)
			if err != nil {
				return time.Time{}, err
			}
			if addressesIn(text)[addr] {
				return at, nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("%s not in the ruleset 30s after the change", addr)
}

// printLogTails prints the last lines of each log in dir: the directory
// is removed after a failed run too.
func printLogTails(out io.Writer, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(out, "--- last lines of %s\n%s\n", filepath.Base(l), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}
