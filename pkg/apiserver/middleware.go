package apiserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// recoverPanics turns a handler panic into a 500 Status instead of a
// dropped connection, and logs the stack.
func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				stack := debug.Stack()
				if wp, ok := v.(*workerPanic); ok {
					v, stack = wp.value, wp.stack
				}
				slog.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(stack))
				handler.WriteError(w, r, apierrors.NewInternalError(fmt.Errorf("%v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func withRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := request.Parse(r)
		info.WarnTo(w.Header())
		next.ServeHTTP(w, r.WithContext(request.WithInfo(r.Context(), info)))
	})
}

type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// served counts requests for the GC tuner (a counter it can read
	// without going through the registry).
	served atomic.Int64
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
	}
	reg.MustRegister(m.total, m.duration)
	return m
}

func (m *requestMetrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.served.Add(1)
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		info, _ := request.InfoFrom(r.Context())
		verb, group, version, resource, sub, scope := info.Verb, "", "", "", "", ""
		if info.IsResourceRequest {
			group, version, resource, sub = info.APIGroup, info.APIVersion, info.Resource, info.Subresource
			switch {
			case info.Name != "":
				scope = "resource"
			case info.Namespace != "":
				scope = "namespace"
			default:
				scope = "cluster"
			}
		}
		verb = upper(verb)
		m.total.WithLabelValues(verb, group, version, resource, sub, scope, "apiserver", strconv.Itoa(rec.code)).Inc()
		if verb != "WATCH" {
			m.duration.WithLabelValues(verb, group, version, resource, sub, scope, "apiserver").Observe(time.Since(start).Seconds())
		}
	})
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// statusRecorder remembers the response code and still flushes, which
// watch streams need.
type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
