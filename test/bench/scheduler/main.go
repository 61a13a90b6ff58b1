// Command scheduler measures how many pods per second kube-lite's scheduler
// binds: it starts the real apiserver (bin/kube-lite-apiserver as a separate
// process when present, else in-process), creates fake nodes and pending
// pods, then runs the scheduler in this process and times the bindings.
//
//	go run ./test/bench/scheduler -scenarios 1000:1000,5000:5000
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
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/scheduler"
	"github.com/kube-lite/kube-lite/test/bench/harness"
)

type scenario struct{ nodes, pods int }

func parseScenarios(s string) ([]scenario, error) {
	var out []scenario
	for _, item := range strings.Split(s, ",") {
		n, p, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, fmt.Errorf("scenario %q: want nodes:pods", item)
		}
		nodes, err1 := strconv.Atoi(n)
		pods, err2 := strconv.Atoi(p)
		if err := errors.Join(err1, err2); err != nil || nodes <= 0 || pods <= 0 {
			return nil, fmt.Errorf("scenario %q: want positive nodes:pods", item)
		}
		out = append(out, scenario{nodes, pods})
	}
	return out, nil
}

func main() {
	binary := flag.String("apiserver", "bin/kube-lite-apiserver", "apiserver binary to start as a separate process; empty or missing runs it in-process")
	scenarios := flag.String("scenarios", "1000:1000,1000:5000,5000:5000", "comma-separated nodes:pods runs, each on a fresh apiserver")
	workers := flag.Int("create-workers", 32, "concurrent creates while setting up")
	bindConcurrency := flag.Int("bind-concurrency", 0, "bindings in flight (0: the scheduler's default)")
	modes := flag.String("modes", "pending,create", "pending: pods exist before the scheduler starts; create: pods are created (by -create-workers clients) while it runs, timed from the first create to the last binding")
	protobuf := flag.Bool("protobuf", true, "talk protobuf to the apiserver, as the scheduler command does")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the scheduler side) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	// Events still queued when a run's apiserver stops fail to send; that
	// is expected here and not worth a screen of klog errors.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)

	runs, err := parseScenarios(*scenarios)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	where := "in-process apiserver"
	if _, err := os.Stat(*binary); *binary != "" && err == nil {
		where = "apiserver process " + *binary
	} else {
		*binary = ""
	}
	fmt.Printf("scheduler throughput, %s, GOMAXPROCS=%d\n", where, runtime.GOMAXPROCS(0))
	fmt.Printf("%-8s %-7s %-7s %-10s %-8s %-11s %s\n", "mode", "nodes", "pods", "bound in", "pods/s", "incl. sync", "pod creates/s alone")
	for _, mode := range strings.Split(*modes, ",") {
		if mode != "pending" && mode != "create" {
			fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
			os.Exit(2)
		}
		for _, sc := range runs {
			r, err := run(sc, runOptions{binary: *binary, workers: *workers, bindConcurrency: *bindConcurrency,
				protobuf: *protobuf, createWhileRunning: mode == "create"})
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s, %d nodes, %d pods: %v\n", mode, sc.nodes, sc.pods, err)
				pprof.StopCPUProfile()
				os.Exit(1)
			}
			inclSync, creates := fmt.Sprintf("%.0f", float64(sc.pods)/r.total.Seconds()), fmt.Sprintf("%.0f", float64(sc.pods)/r.creating.Seconds())
			if mode == "create" {
				inclSync, creates = "-", "-"
			}
			fmt.Printf("%-8s %-7d %-7d %-10s %-8.0f %-11s %s\n", mode, sc.nodes, sc.pods,
				fmt.Sprintf("%.2fs", r.scheduling.Seconds()), float64(sc.pods)/r.scheduling.Seconds(), inclSync, creates)
		}
	}
}

type result struct {
	// scheduling: from the scheduler's caches being synced to the last
	// binding seen; total adds the informers' initial list.
	scheduling, total time.Duration
	// creating is how long creating the pods took without a scheduler
	// (pending mode): the apiserver's own pace, for context.
	creating time.Duration
}

func run(sc scenario, o runOptions) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, stop, err := startAPIServer(ctx, o.binary)
	if err != nil {
		return result{}, err
	}
	defer stop()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: measure the server and the scheduler
	if o.protobuf {
		cfg.ContentType = scheduler.ProtobufContentType
		cfg.AcceptContentTypes = scheduler.ProtobufContentType + ",application/json"
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return result{}, err
	}

	if err := harness.Parallel(ctx, sc.nodes, o.workers, func(i int) error {
		_, err := client.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return result{}, fmt.Errorf("create nodes: %w", err)
	}
	createPods := func() error {
		return harness.Parallel(ctx, sc.pods, o.workers, func(i int) error {
			_, err := client.CoreV1().Pods("default").Create(ctx, pendingPod(i), metav1.CreateOptions{})
			return err
		})
	}
	var creating time.Duration
	if !o.createWhileRunning {
		t0 := time.Now()
		if err := createPods(); err != nil {
			return result{}, fmt.Errorf("create pods: %w", err)
		}
		creating = time.Since(t0)
	}

	// Count bindings through a watch, as a user of the API sees them.
	list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return result{}, err
	}
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return result{}, err
	}
	defer w.Stop()

	sched, err := scheduler.New(scheduler.Config{Client: client, BindConcurrency: o.bindConcurrency})
	if err != nil {
		return result{}, err
	}
	schedCtx, stopSched := context.WithCancel(ctx)
	defer stopSched()
	start := time.Now()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); _ = sched.Run(schedCtx) }()
	// Stop the scheduler before the apiserver, so that it drains cleanly.
	defer func() { stopSched(); <-schedDone }()
	var synced atomic.Int64
	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		for !sched.Synced() && schedCtx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		synced.Store(time.Now().UnixNano())
	}()
	createErr := make(chan error, 1)
	if o.createWhileRunning {
		<-syncDone
		start = time.Now()
		go func() { createErr <- createPods() }()
	}

	bound := map[string]bool{}
	deadline := time.After(10 * time.Minute)
	var last time.Time
	for len(bound) < sc.pods {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return result{}, fmt.Errorf("watch closed after %d bindings", len(bound))
			}
			if ev.Type != watch.Modified {
				continue
			}
			if p, ok := ev.Object.(*v1.Pod); ok && p.Spec.NodeName != "" && !bound[p.Name] {
				bound[p.Name] = true
				last = time.Now()
			}
		case err := <-createErr:
			if err != nil {
				return result{}, fmt.Errorf("create pods: %w", err)
			}
		case <-deadline:
			return result{}, fmt.Errorf("only %d of %d pods bound after 10 minutes", len(bound), sc.pods)
		}
	}
	if o.createWhileRunning {
		return result{scheduling: last.Sub(start), total: last.Sub(start)}, nil
	}
	syncedAt := time.Unix(0, synced.Load())
	if syncedAt.IsZero() || syncedAt.Before(start) {
		syncedAt = start
	}
	return result{scheduling: last.Sub(syncedAt), total: last.Sub(start), creating: creating}, nil
}

type runOptions struct {
	binary             string
	workers            int
	bindConcurrency    int
	protobuf           bool
	createWhileRunning bool
}

func fakeNode(i int) *v1.Node {
	name := fmt.Sprintf("node-%05d", i)
	rl := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("256Gi"),
		v1.ResourcePods: resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelHostname: name, v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%10)}},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
}

func pendingPod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%05d", i), Labels: map[string]string{"app": "bench"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("100Mi")}}}}},
	}
}

// startAPIServer starts the apiserver on a free port with a fresh embedded
// etcd, as a child process when binary is set.
func startAPIServer(ctx context.Context, binary string) (*rest.Config, func(), error) {
	dir, err := os.MkdirTemp("", "kube-lite-bench-")
	if err != nil {
		return nil, nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, nil, err
	}
	// The bench acts as a cluster admin with a client certificate, so that
	// authentication and authorization are on the path as in a cluster.
	caFile, admin, _, err := harness.Admin(dir)
	if err != nil {
		return nil, nil, err
	}
	args := []string{"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--data-dir", filepath.Join(dir, "etcd"), "--cert-dir", filepath.Join(dir, "certs"), "--client-ca-file", caFile}
	var stop func()
	if binary != "" {
		cmd := exec.CommandContext(ctx, binary, args...)
		logf, err := os.Create(filepath.Join(dir, "apiserver.log"))
		if err != nil {
			return nil, nil, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return nil, nil, fmt.Errorf("start %s: %w", binary, err)
		}
		stop = func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			_ = logf.Close()
			_ = os.RemoveAll(dir)
		}
	} else {
		o := apiserver.NewOptions()
		o.BindAddress, o.SecurePort = "127.0.0.1", port
		o.DataDir, o.CertDir = filepath.Join(dir, "etcd"), filepath.Join(dir, "certs")
		o.Security.ClientCAFile = caFile
		srvCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := apiserver.Run(srvCtx, o, nil); err != nil {
				slog.Error("apiserver", "err", err)
			}
		}()
		stop = func() { cancel(); <-done; _ = os.RemoveAll(dir) }
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	// The server's certificate is self-signed for this run.
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for i := 0; ; i++ {
		resp, err := hc.Get(host + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if i > 600 {
			stop()
			return nil, nil, fmt.Errorf("apiserver at %s not ready after 60s", host)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: admin.CertPEM, KeyData: admin.KeyPEM}}, stop, nil
}
