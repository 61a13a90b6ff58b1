// Package server is the kubelet's HTTPS API on port 10250: /healthz,
// /pods, /containerLogs/<ns>/<pod>/<container> and /metrics. The API
// server's pods/log proxies to it, so `kubectl logs -f` streams from here.
package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provider is what the server shows of the kubelet.
type Provider interface {
	Pods() []*v1.Pod
	// ContainerLog finds a container's CRI log file; previous asks for the
	// instance before the current one. running reports whether that
	// instance may still write (follow keeps reading while it does).
	ContainerLog(ctx context.Context, namespace, pod, container string, previous bool) (path string, running func() bool, err error)
	Healthy() error
}

// ErrNotFound makes the server answer 404.
var ErrNotFound = errors.New("not found")

// Server serves the kubelet API.
type Server struct {
	Provider Provider
	Gatherer prometheus.Gatherer
	// RequireClientCert: without a verified client certificate only /healthz answers.
	RequireClientCert bool
	// Authorizer, when set, decides what each certificate's user may do;
	// a user without the right gets 403.
	Authorizer Authorizer
	// PollInterval is how often follow checks for new log lines.
	PollInterval time.Duration
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.Provider.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	gatherer := s.Gatherer
	if gatherer == nil {
		gatherer = prometheus.NewRegistry()
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || !s.RequireClientCert {
			mux.ServeHTTP(w, r)
			return
		}
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if s.Authorizer != nil {
			subject := r.TLS.VerifiedChains[0][0].Subject
			verb, sub := verbOf(r.Method), subresourceOf(r.URL.Path)
			ok, reason, err := s.Authorizer.Authorize(r.Context(), subject.CommonName, subject.Organization, verb, sub)
			if err != nil {
				http.Error(w, "authorization check failed: "+err.Error(), http.StatusInternalServerError)
				return
			}
			if !ok {
				msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", subject.CommonName, verb, sub)
				if reason != "" {
					msg += ": " + reason
				}
				http.Error(w, msg, http.StatusForbidden)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range s.Provider.Pods() {
		list.Items = append(list.Items, *p)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&list)
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := LogOptions{
		Follow:     boolParam(q.Get("follow")),
		Timestamps: boolParam(q.Get("timestamps")),
		TailLines:  -1,
	}
	previous := boolParam(q.Get("previous"))
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("tailLines must be a non-negative integer, got %q", v), http.StatusBadRequest)
			return
		}
		opts.TailLines = n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			http.Error(w, fmt.Sprintf("limitBytes must be a positive integer, got %q", v), http.StatusBadRequest)
			return
		}
		opts.LimitBytes = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			http.Error(w, fmt.Sprintf("sinceSeconds must be a positive integer, got %q", v), http.StatusBadRequest)
			return
		}
		opts.Since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			http.Error(w, fmt.Sprintf("sinceTime: %v", err), http.StatusBadRequest)
			return
		}
		opts.Since = t
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	path, running, err := s.Provider.ContainerLog(r.Context(), ns, pod, container, previous)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, fmt.Sprintf("open log of %s/%s/%s: %v", ns, pod, container, err), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	if !opts.Follow {
		running = func() bool { return false }
	}
	poll := s.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	if err := CopyLog(r.Context(), w, f, opts, running, poll); err != nil && r.Context().Err() == nil {
		slog.Debug("stream log", "err", err)
	}
}

func boolParam(v string) bool {
	b, _ := strconv.ParseBool(v)
	return b || v == "1"
}

// Run serves on addr with TLS until ctx ends.
func (s *Server) Run(ctx context.Context, addr string, tlsCfg *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	slog.Info("kubelet API serving", "addr", ln.Addr().String())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("kubelet API: %w", err)
	}
	return nil
}

// TLSConfig loads the serving pair and, if given, the client CA bundle.
func TLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load kubelet serving certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("read client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificates in %s", clientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// trimmed is for error messages.
func trimmed(s string) string { return strings.TrimSpace(s) }
