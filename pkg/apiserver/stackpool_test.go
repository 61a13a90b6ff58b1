package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// poolServer serves h behind the middleware order the apiserver uses.
func poolServer(t *testing.T, workers int, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv := httptest.NewServer(recoverPanics(withRequestInfo(newStackPool(ctx, workers).middleware(h))))
	t.Cleanup(srv.Close)
	return srv
}

func TestStackPoolServesConcurrentRequests(t *testing.T) {
	// Fewer workers than concurrent requests: the rest run on their own
	// goroutine, and every request still gets its own answer.
	srv := poolServer(t, 2, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/api/v1/namespaces/default/configmaps/cm" + strings.Repeat("x", i)
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != path {
				t.Errorf("GET %s answered %q", path, body)
			}
		}()
	}
	wg.Wait()
}

func TestStackPoolPanicIsAStatus(t *testing.T) {
	srv := poolServer(t, 4, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/boom") {
			panic("boom")
		}
		_, _ = io.WriteString(w, "ok")
	})
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/configmaps/boom")
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Kind, Status, Message string
		Code                  int
	}
	err = json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusInternalServerError || status.Kind != "Status" || !strings.Contains(status.Message, "boom") {
		t.Fatalf("a panicking handler answered %d %+v (%v), want a 500 Status naming the panic", resp.StatusCode, status, err)
	}
	// The worker that panicked is still there to serve.
	for range 8 {
		resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/configmaps/fine")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Fatalf("after a panic: %d %q", resp.StatusCode, body)
		}
	}
}

func TestStackPoolAbortHandlerDropsTheResponse(t *testing.T) {
	srv := poolServer(t, 4, func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	})
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/configmaps/x")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("an aborted handler answered %d, want the connection dropped", resp.StatusCode)
	}
}
