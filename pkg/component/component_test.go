package component

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHealthAndMetricsEndpoints(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var synced atomic.Bool
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "component_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeListener(ctx, ln, func() error {
			if !synced.Load() {
				return errors.New("informers not synced")
			}
			return nil
		}, reg)
	}()
	base := "http://" + ln.Addr().String()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez = %d, want 200", code)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "informers not synced") {
		t.Errorf("/readyz while not ready = %d %q, want 503 naming the reason", code, body)
	}
	synced.Store(true)
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz when ready = %d, want 200", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "component_test_total 1") {
		t.Errorf("/metrics does not serve the registry: %q", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServeListener after cancel: %v", err)
	}
}
