// Command testapp is kube-lite's test workload: a small HTTP server whose
// health and readiness can be flipped from outside, so that end-to-end
// tests can drive probes, and which tells who and where it is.
//
//	/            pod IP, hostname and version
//	/healthz     200 while healthy (flip with /toggle-healthy)
//	/readyz      200 while ready (flip with /toggle-ready)
//	/exit?code=N exits the process with code N
//
// With -get it is a client instead: it fetches each URL -count times, as a
// program in a pod would (cluster DNS, the cluster's CA), prints the
// answers and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// version is set with -ldflags "-X main.version=..." by hack/images.sh.
var version = "dev"

func main() {
	port := flag.Int("port", envInt("PORT", 8080), "TCP port to listen on (env PORT)")
	notReady := flag.Bool("start-unready", os.Getenv("START_UNREADY") != "", "start with /readyz failing (env START_UNREADY)")
	termMarker := flag.String("term-marker", os.Getenv("TERM_MARKER"), "file to write when SIGTERM arrives, before exiting (env TERM_MARKER)")
	var gets urlList
	flag.Var(&gets, "get", "client mode: URL to fetch and print (repeatable); https trusts the pod's service-account CA")
	count := flag.Int("count", 1, "client mode: how many times to fetch each URL")
	wait := flag.Duration("wait", 0, "client mode: how long to wait for each URL's first answer")
	token := flag.Bool("token", false, "client mode: present the pod's service-account token")
	flag.Parse()

	if len(gets) > 0 {
		c, err := newClient(serviceAccountDir, *token, os.Stdout)
		if err == nil {
			err = c.run(context.Background(), gets, *count, *wait)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testapp:", err)
			os.Exit(1)
		}
		return
	}

	var healthy, ready atomic.Bool
	healthy.Store(true)
	ready.Store(!*notReady)

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		host, _ := os.Hostname()
		fmt.Fprintf(w, "ip=%s hostname=%s version=%s\n", podIP(), host, version)
	})
	mux.HandleFunc("/healthz", flagHandler(&healthy))
	mux.HandleFunc("/readyz", flagHandler(&ready))
	mux.HandleFunc("/toggle-healthy", toggleHandler(&healthy))
	mux.HandleFunc("/toggle-ready", toggleHandler(&ready))
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(http.StatusOK)
		go func() { time.Sleep(50 * time.Millisecond); os.Exit(code) }()
	})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Addr: fmt.Sprintf(":%d", *port), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		if *termMarker != "" {
			_ = os.WriteFile(*termMarker, []byte("terminated\n"), 0o644)
		}
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	slog.Info("testapp listening", "port", *port, "version", version)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("serve", "err", err)
		os.Exit(1)
	}
}

func flagHandler(v *atomic.Bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if !v.Load() {
			http.Error(w, "not ok", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}

func toggleHandler(v *atomic.Bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for {
			old := v.Load()
			if v.CompareAndSwap(old, !old) {
				fmt.Fprintf(w, "%t\n", !old)
				return
			}
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// podIP prefers the downward-API value and falls back to the first
// non-loopback address, which in a pod sandbox is eth0's.
func podIP() string {
	if ip := os.Getenv("POD_IP"); ip != "" {
		return ip
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
