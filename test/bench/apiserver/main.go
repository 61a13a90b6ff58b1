// Command apiserver measures a kube-lite-apiserver process: creates per
// second and their latency at several client counts, watch delivery latency
// to many watchers, and raw etcd create transactions against the same
// embedded etcd as the floor underneath. Run it from the repository root
// after `make build`:
//
//	go run ./test/bench/apiserver
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/test/bench/harness"
)

type options struct {
	apiserver  string
	clients    []int
	count      int
	maxPerStep time.Duration
	watchers   int
	// busyWatchers watch every ConfigMap while the creates run, as the
	// informers of a running cluster watch what is written.
	busyWatchers int
	events       int
	keep         bool
	profile      string
	profileFor   time.Duration
	// benchProfile is a CPU profile of this process (client-go) during
	// the last create step: on two cores its cycles are taken from the
	// server's.
	benchProfile string
	protobuf     bool
	// etcdServers, when set, points the apiserver at an external etcd
	// (plain HTTP on loopback) instead of its embedded one.
	etcdServers string
	// upstream is a directory with upstream's kube-apiserver and etcd
	// binaries, measured after kube-lite in the same run.
	upstream      string
	upstreamFirst bool
	rounds        int
}

func main() {
	var o options
	var clients string
	flag.StringVar(&o.apiserver, "apiserver", "bin/kube-lite-apiserver", "the apiserver binary to start")
	flag.StringVar(&clients, "clients", "1,8,32", "concurrent client counts to measure")
	flag.IntVar(&o.count, "count", 3000, "creates per client count (fewer if -max-step ends the step first)")
	flag.DurationVar(&o.maxPerStep, "max-step", 20*time.Second, "upper bound on the duration of one measurement")
	flag.IntVar(&o.watchers, "watchers", 100, "watchers for the delivery latency measurement")
	flag.IntVar(&o.busyWatchers, "create-watchers", 0, "watchers of every ConfigMap that run while the creates are measured (a running cluster's informers)")
	flag.IntVar(&o.events, "events", 200, "objects created while the watchers watch")
	flag.BoolVar(&o.protobuf, "protobuf", true, "talk protobuf to the apiserver (false: JSON)")
	flag.StringVar(&o.etcdServers, "etcd-servers", "", "an external etcd (http://127.0.0.1:2379) for the apiserver and the floor; empty uses the embedded one")
	flag.StringVar(&o.upstream, "upstream", "", "a directory with upstream kube-apiserver and etcd binaries (hack/upstream-apiserver.sh builds them) to measure after kube-lite, the same way")
	flag.BoolVar(&o.upstreamFirst, "upstream-first", false, "with -upstream, measure upstream before kube-lite")
	flag.IntVar(&o.rounds, "rounds", 1, "measure this many times (with -upstream, alternating which server goes first) and print the median ratios")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, data)")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of the apiserver, taken during the last create step, to this file (and its allocations to this file.allocs)")
	flag.DurationVar(&o.profileFor, "profile-duration", 2*time.Second, "how long -profile samples (keep it shorter than the step)")
	flag.StringVar(&o.benchProfile, "bench-profile", "", "write a CPU profile of the bench process itself, during the last create step, to this file")
	flag.Parse()
	for _, s := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: bad -clients entry %q\n", s)
			os.Exit(2)
		}
		o.clients = append(o.clients, n)
	}
	if o.rounds < 1 {
		fmt.Fprintf(os.Stderr, "bench: -rounds must be at least 1, not %d\n", o.rounds)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.rounds)*15*time.Minute)
	defer cancel()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// result is one row of the printed table.
type result struct {
	what    string
	clients int
	ops     int
	elapsed time.Duration
	lat     []time.Duration // sorted, for percentile
	// latencyOnly rows count deliveries, not a throughput.
	latencyOnly bool
	// serverCPU and benchCPU are the CPU time the apiserver process (with
	// its embedded etcd) and this process used during the step: on a small
	// machine they share the same cores, so both are part of the cost.
	serverCPU, benchCPU time.Duration
	// serverSyscalls counts the apiserver's read and write system calls
	// (sockets and the WAL): each is a kernel entry and usually a wakeup.
	serverSyscalls int64
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

func run(ctx context.Context, o options, out io.Writer) error {
	fmt.Fprintf(out, "kube-lite apiserver benchmark: %d CPUs, GOMAXPROCS %d, %s/%s, apiserver %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, o.apiserver)
	// Upstream runs on the same machine in the same run, with the same
	// client and steps: the comparison DESIGN.md's goals are set in. Which
	// goes first is a flag, and with -rounds the order alternates from round
	// to round, so that the drift of a shared host cancels out.
	var ratios [][]ratio
	for round := range o.rounds {
		if o.rounds > 1 {
			fmt.Fprintf(out, "\nround %d of %d\n", round+1, o.rounds)
		}
		var results, upstream []result
		steps := []func() error{
			func() (err error) {
				results, err = measureServer(ctx, o, startKubeLite, o.profile, o.benchProfile)
				return err
			},
		}
		if o.upstream != "" {
			up := func() (err error) { upstream, err = measureServer(ctx, o, startUpstream, "", ""); return err }
			if o.upstreamFirst != (round%2 == 1) {
				steps = append([]func() error{up}, steps...)
			} else {
				steps = append(steps, up)
			}
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		rs := createRatios(results, upstream)
		for i := range upstream {
			upstream[i].what = "upstream " + upstream[i].what
		}
		printTable(out, append(results, upstream...))
		printRatios(out, rs)
		ratios = append(ratios, rs)
	}
	if o.rounds > 1 && o.upstream != "" {
		printMedianRatios(out, ratios)
	}
	return nil
}

// measureServer starts a server, measures it and stops it.
func measureServer(ctx context.Context, o options, start func(context.Context, options) (*server, error), profile, benchProfile string) ([]result, error) {
	srv, err := start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	return measure(ctx, o, srv, profile, benchProfile)
}

// measure runs the steps against one server: the raw etcd floor and the
// creates at each client count, then the watch delivery latency.
func measure(ctx context.Context, o options, srv *server, profile, benchProfile string) ([]result, error) {
	cs, err := kubernetes.NewForConfig(srv.rest)
	if err != nil {
		return nil, err
	}
	etcdClient, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.etcdEndpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("connect to %s's etcd at %s: %w", srv.name, srv.etcdEndpoint, err)
	}
	defer etcdClient.Close()

	// A short warm-up so that the first step does not pay for connection
	// setup and the server's first allocations.
	if _, err := createConfigMaps(ctx, cs, "bench-warmup", 4, 200, o.maxPerStep); err != nil {
		return nil, fmt.Errorf("%s warm-up: %w", srv.name, err)
	}

	var results []result
	for _, n := range o.clients {
		c0 := srv.cpu()
		r, err := rawEtcdCreates(ctx, etcdClient, n, o.count, o.maxPerStep)
		r.serverCPU, r.benchCPU, r.serverSyscalls = srv.cpu().sub(c0)
		if err != nil {
			return nil, fmt.Errorf("%s: etcd creates with %d clients: %w", srv.name, n, err)
		}
		results = append(results, r)
	}
	if o.busyWatchers > 0 {
		stop, err := watchAll(ctx, cs, o.busyWatchers)
		if err != nil {
			return nil, fmt.Errorf("%s: watchers during creates: %w", srv.name, err)
		}
		defer stop()
	}
	for _, n := range o.clients {
		last := n == o.clients[len(o.clients)-1]
		var profiled chan error
		if profile != "" && last {
			profiled = make(chan error, 1)
			go func() { profiled <- saveProfile(ctx, cs, profile, o.profileFor) }()
		}
		stopProfile := func() {}
		if benchProfile != "" && last {
			if stopProfile, err = startBenchProfile(benchProfile); err != nil {
				return nil, err
			}
		}
		c0 := srv.cpu()
		r, err := createConfigMaps(ctx, cs, fmt.Sprintf("bench-c%d", n), n, o.count, o.maxPerStep)
		r.serverCPU, r.benchCPU, r.serverSyscalls = srv.cpu().sub(c0)
		stopProfile()
		if profiled != nil {
			if perr := <-profiled; perr != nil {
				fmt.Fprintf(os.Stderr, "bench: cpu profile: %v\n", perr)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: creates with %d clients: %w", srv.name, n, err)
		}
		results = append(results, r)
	}
	if o.watchers > 0 {
		w, err := watchLatency(ctx, cs, o.watchers, o.events, o.maxPerStep)
		if err != nil {
			return nil, fmt.Errorf("%s: watch latency: %w", srv.name, err)
		}
		results = append(results, w)
	}
	return results, nil
}

// ratio compares kube-lite's creates with upstream's at one client count.
type ratio struct {
	clients    int
	rate       float64 // kube-lite's creates/s over upstream's
	p99, upP99 time.Duration
}

// createCM names the create steps, which createRatios pairs.
const createCM = "apiserver create ConfigMap"

// createRatios pairs kube-lite's create steps with upstream's.
func createRatios(ours, upstream []result) []ratio {
	var rs []ratio
	for _, u := range upstream {
		if u.what != createCM || u.ops == 0 {
			continue
		}
		for _, r := range ours {
			if r.what == createCM && r.clients == u.clients {
				rs = append(rs, ratio{clients: r.clients, rate: r.rate() / u.rate(), p99: harness.Percentile(r.lat, 0.99), upP99: harness.Percentile(u.lat, 0.99)})
			}
		}
	}
	return rs
}

func printRatios(out io.Writer, rs []ratio) {
	for _, r := range rs {
		fmt.Fprintf(out, "kube-lite / upstream, %d clients: %.2f× the creates/s, p99 %s against %s\n",
			r.clients, r.rate, fmtDur(r.p99), fmtDur(r.upP99))
	}
}

// printMedianRatios prints, per client count, the median and the range of
// the rate ratio over the rounds.
func printMedianRatios(out io.Writer, rounds [][]ratio) {
	by := map[int][]float64{}
	var counts []int
	for _, rs := range rounds {
		for _, r := range rs {
			if _, ok := by[r.clients]; !ok {
				counts = append(counts, r.clients)
			}
			by[r.clients] = append(by[r.clients], r.rate)
		}
	}
	fmt.Fprintf(out, "\nover %d rounds, order alternating:\n", len(rounds))
	for _, n := range counts {
		v := by[n]
		slices.Sort(v)
		med := (v[(len(v)-1)/2] + v[len(v)/2]) / 2
		fmt.Fprintf(out, "kube-lite / upstream, %d clients: median %.2f× the creates/s (%.2f–%.2f×)\n", n, med, v[0], v[len(v)-1])
	}
}

func printTable(out io.Writer, rs []result) {
	fmt.Fprintf(out, "\n%-34s %8s %8s %10s %10s %10s %12s %12s %13s\n", "measurement", "clients", "ops", "ops/s", "p50", "p99", "server µs/op", "bench µs/op", "server rw/op")
	for _, r := range rs {
		rate := fmt.Sprintf("%.0f", r.rate())
		serverCPU, benchCPU, syscalls := "-", "-", "-"
		if r.latencyOnly {
			rate = "-"
		} else if r.ops > 0 {
			serverCPU = fmt.Sprintf("%.0f", float64(r.serverCPU.Microseconds())/float64(r.ops))
			benchCPU = fmt.Sprintf("%.0f", float64(r.benchCPU.Microseconds())/float64(r.ops))
			syscalls = fmt.Sprintf("%.1f", float64(r.serverSyscalls)/float64(r.ops))
		}
		fmt.Fprintf(out, "%-34s %8d %8d %10s %10s %10s %12s %12s %13s\n", r.what, r.clients, r.ops, rate,
			fmtDur(harness.Percentile(r.lat, 0.50)), fmtDur(harness.Percentile(r.lat, 0.99)), serverCPU, benchCPU, syscalls)
	}
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// runWorkers calls op from n goroutines until total calls were made, the
// step has run for maxDur, or an op fails; it returns the count of
// successful ops, the wall time and each op's latency.
func runWorkers(ctx context.Context, n, total int, maxDur time.Duration, op func(ctx context.Context, i int) error) (int, time.Duration, []time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Now().Add(maxDur)
	var next atomic.Int64
	lats := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total || time.Now().After(deadline) || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := op(ctx, i); err != nil {
					errs[w] = err
					cancel()
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	return len(all), elapsed, all, errors.Join(errs...)
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// benchConfigMap is a small object, about the size of a typical ConfigMap.
func benchConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench", "tier": "backend"}},
		Data:       map[string]string{"config.yaml": "replicas: 3\nimage: kube-lite.local/app:1.0\nlogLevel: info\n"},
	}
}

func createConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string, clients, total int, maxDur time.Duration) (result, error) {
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return result{}, err
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	ops, elapsed, lat, err := runWorkers(ctx, clients, total, maxDur, func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, benchConfigMap("cm-"+strconv.Itoa(i)), metav1.CreateOptions{})
		return err
	})
	return result{what: createCM, clients: clients, ops: ops, elapsed: elapsed, lat: lat}, err
}

func rawEtcdCreates(ctx context.Context, c *clientv3.Client, clients, total int, maxDur time.Duration) (result, error) {
	// The value is a protobuf ConfigMap of the size the apiserver stores.
	value := strings.Repeat("v", 320)
	prefix := fmt.Sprintf("/bench-raw/c%d/", clients)
	ops, elapsed, lat, err := runWorkers(ctx, clients, total, maxDur, func(ctx context.Context, i int) error {
		key := prefix + strconv.Itoa(i)
		resp, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, value)).Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return fmt.Errorf("key %s exists", key)
		}
		return nil
	})
	return result{what: "etcd create txn (floor)", clients: clients, ops: ops, elapsed: elapsed, lat: lat}, err
}

// watchAll starts n watches of every ConfigMap from now on that read and
// drop what they receive, until the returned func is called.
func watchAll(ctx context.Context, cs kubernetes.Interface, n int) (func(), error) {
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range n {
		w, err := cs.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-w.ResultChan():
					if !ok {
						return
					}
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }, nil
}

// watchLatency starts watchers on one namespace, creates objects one after
// another and measures, for each object and watcher, the time from the
// create response to the ADDED event at that watcher.
func watchLatency(ctx context.Context, cs kubernetes.Interface, watchers, events int, maxDur time.Duration) (result, error) {
	const ns = "bench-watch"
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return result{}, err
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return result{}, err
	}
	created := make([]atomic.Int64, events) // unix nanos of each create response
	received := make([][]time.Time, watchers)
	wctx, cancel := context.WithTimeout(ctx, maxDur+30*time.Second)
	defer cancel()
	var ready, done sync.WaitGroup
	var failed atomic.Value
	var rewatches atomic.Int64
	for w := range watchers {
		wi, err := cms.Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return result{}, fmt.Errorf("watcher %d: %w", w, err)
		}
		received[w] = make([]time.Time, events)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			seen, rv := 0, list.ResourceVersion
			for {
				for ev := range wi.ResultChan() {
					now := time.Now()
					if ev.Type != watch.Added {
						failed.Store(fmt.Errorf("watcher %d: unexpected %s event: %v", w, ev.Type, ev.Object))
						wi.Stop()
						return
					}
					cm := ev.Object.(*corev1.ConfigMap)
					rv = cm.ResourceVersion
					i, err := strconv.Atoi(strings.TrimPrefix(cm.Name, "cm-"))
					if err != nil || i >= events {
						continue
					}
					if !received[w][i].IsZero() {
						failed.Store(fmt.Errorf("watcher %d: %s delivered twice", w, cm.Name))
					}
					received[w][i] = now
					if seen++; seen == events {
						wi.Stop()
						return
					}
				}
				if wctx.Err() != nil {
					failed.Store(fmt.Errorf("watcher %d: %d of %d events before the deadline", w, seen, events))
					return
				}
				// The server may end a watch (upstream does for slow
				// consumers); a client resumes from the last version seen.
				rewatches.Add(1)
				if wi, err = cms.Watch(wctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
					failed.Store(fmt.Errorf("watcher %d: resume from %s: %w", w, rv, err))
					return
				}
			}
		}()
	}
	ready.Wait()
	start := time.Now()
	deadline := start.Add(maxDur)
	made := 0
	for i := range events {
		if time.Now().After(deadline) {
			break
		}
		if _, err := cms.Create(ctx, benchConfigMap("cm-"+strconv.Itoa(i)), metav1.CreateOptions{}); err != nil {
			return result{}, err
		}
		created[i].Store(time.Now().UnixNano())
		made++
		// One object at a time, a little apart, so that the figure is
		// delivery latency rather than queueing behind the previous event.
		time.Sleep(5 * time.Millisecond)
	}
	if made < events {
		cancel()
	}
	allDone := make(chan struct{})
	go func() { done.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-time.After(10 * time.Second):
		// A healthy server delivers within milliseconds; say so early when
		// it does not, instead of only after the deadline.
		slog.Warn("watchers still waiting 10s after the last create", "watchers", watchers, "events", made)
		<-allDone
	}
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil && made == events {
		return result{}, fmt.Errorf("%w (%s)", err, missing(received, made))
	}
	var lat []time.Duration
	for w := range watchers {
		for i := range made {
			if received[w][i].IsZero() {
				continue
			}
			d := received[w][i].Sub(time.Unix(0, created[i].Load()))
			// The event can beat the create response back; that is zero latency.
			lat = append(lat, max(d, 0))
		}
	}
	if n := rewatches.Load(); n > 0 {
		slog.Warn("watches ended by the server and resumed", "count", n)
	}
	slices.Sort(lat)
	return result{what: fmt.Sprintf("watch delivery, %d watchers", watchers), clients: watchers, ops: len(lat), elapsed: elapsed, lat: lat, latencyOnly: true}, nil
}

// missing summarises which events watchers did not receive.
func missing(received [][]time.Time, made int) string {
	byIndex := map[int]int{}
	for _, r := range received {
		for i := range made {
			if r[i].IsZero() {
				byIndex[i]++
			}
		}
	}
	return fmt.Sprintf("events not received, index: watchers missing it: %v", byIndex)
}

// server is an apiserver under test: its processes (the apiserver first;
// for upstream, its etcd too), how to reach it, and its etcd.
type server struct {
	name         string
	procs        []*harness.Process
	dir          string
	keep         bool
	rest         *rest.Config
	etcdEndpoint string
}

// exited reports whether any of the server's processes has ended.
func (s *server) exited() bool {
	for _, p := range s.procs {
		select {
		case <-p.Exited:
			return true
		default:
		}
	}
	return false
}

// logged is the error of a start that failed after s wrote its log: s's
// directory is kept (its processes still stop) so that the log can be read.
func (s *server) logged(err error, log string) error {
	s.keep = true
	return fmt.Errorf("%w; log in %s", err, log)
}

func (s *server) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
	if s.keep {
		slog.Info("kept", "dir", s.dir)
		return
	}
	_ = os.RemoveAll(s.dir)
}

var etcdEndpointRE = regexp.MustCompile(`embedded etcd ready.*endpoints="?\[?(https?://[0-9.:]+)`)

func (o options) restConfig(port int, caFile string, admin *pki.KeyPair) *rest.Config {
	c := &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(port),
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile, CertData: admin.CertPEM, KeyData: admin.KeyPEM},
		QPS:             -1, // no client-side rate limit: the server is what is measured
	}
	if o.protobuf {
		c.ContentType = "application/vnd.kubernetes.protobuf"
		c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	return c
}

func startKubeLite(ctx context.Context, o options) (_ *server, err error) {
	bin, err := filepath.Abs(o.apiserver)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (run `make build` first)", o.apiserver, err)
	}
	dir, err := os.MkdirTemp("", "kube-lite-bench-")
	if err != nil {
		return nil, err
	}
	srv := &server{name: "kube-lite", dir: dir, keep: o.keep}
	defer func() {
		if err != nil {
			srv.stop() // its processes and, unless -keep, its directory
		}
	}()
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	clientCAFile, admin, _, err := harness.Admin(dir)
	if err != nil {
		return nil, err
	}
	args := []string{"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--data-dir=" + filepath.Join(dir, "etcd"), "--cert-dir=" + certDir,
		"--client-ca-file=" + clientCAFile}
	endpoint := make(chan string, 1)
	if o.etcdServers != "" {
		args = append(args, "--etcd-servers="+o.etcdServers)
		endpoint <- strings.Split(o.etcdServers, ",")[0]
	}
	logPath := filepath.Join(dir, "apiserver.log")
	p, err := harness.StartProcess(bin, args, logPath, func(line string) {
		if m := etcdEndpointRE.FindStringSubmatch(line); m != nil {
			select {
			case endpoint <- m[1]:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	srv.procs = []*harness.Process{p}

	wait, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	select {
	case srv.etcdEndpoint = <-endpoint:
	case <-p.Exited:
		return nil, srv.logged(errors.New("apiserver exited at start"), logPath)
	case <-wait.Done():
		return nil, srv.logged(errors.New("apiserver did not report its embedded etcd in time"), logPath)
	}
	srv.rest = o.restConfig(port, filepath.Join(certDir, pki.SelfSignedCertFile), admin)
	if err := waitReady(wait, srv); err != nil {
		return nil, srv.logged(err, logPath)
	}
	settle(wait, srv) // as upstream's is given time to: the same for both
	return srv, nil
}

func waitReady(ctx context.Context, s *server) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // readiness probe only
	for {
		resp, err := hc.Get(s.rest.Host + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if s.exited() {
			return fmt.Errorf("%s exited before it was ready", s.name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last error %v)", s.name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cpuTimes is the CPU time (user + system) used so far by the server's
// processes and by this process.
type cpuTimes struct {
	server, bench  time.Duration
	serverSyscalls int64
}

func (c cpuTimes) sub(prev cpuTimes) (server, bench time.Duration, serverSyscalls int64) {
	return c.server - prev.server, c.bench - prev.bench, c.serverSyscalls - prev.serverSyscalls
}

// cpu reads the CPU time of the server's processes and of this one; a
// figure it cannot read is zero (the table then shows 0, not a failed run).
func (s *server) cpu() cpuTimes {
	var c cpuTimes
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		c.bench = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, p := range s.procs {
		t, _ := harness.ProcessCPU(p.Pid())
		n, _ := processSyscalls(p.Pid())
		c.server += t
		c.serverSyscalls += n
	}
	return c
}

// processSyscalls is syscr + syscw of pid from /proc/pid/io.
func processSyscalls(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "syscr" || k == "syscw") {
			c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/io: %w", pid, err)
			}
			n += c
		}
	}
	return n, nil
}

// startBenchProfile profiles this process until the returned func is called.
func startBenchProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// saveProfile fetches a CPU profile of the apiserver (its /debug/pprof).
// The allocations made over the same time go to path + ".allocs".
func saveProfile(ctx context.Context, cs kubernetes.Interface, path string, d time.Duration) error {
	secs := strconv.Itoa(max(1, int(d.Seconds())))
	fetch := func(what, to string) error {
		data, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/"+what).Param("seconds", secs).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%s profile: %w", what, err)
		}
		return os.WriteFile(to, data, 0o644)
	}
	allocs := make(chan error, 1)
	go func() { allocs <- fetch("allocs", path+".allocs") }()
	return errors.Join(fetch("profile", path), <-allocs)
}
