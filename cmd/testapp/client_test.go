package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestClientPrintsEachAnswer(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			n++
		}
		w.Write([]byte("hostname=a\n"))
	}))
	defer srv.Close()
	var out bytes.Buffer
	c, err := newClient(t.TempDir(), false, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.run(context.Background(), []string{srv.URL}, 3, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "hostname=a\nhostname=a\nhostname=a\n"; got != want || n != 3 {
		t.Errorf("printed %q after %d GETs, want %q after 3", got, n, want)
	}
}

// The API is reached over https with the cluster's CA and the pod's token,
// as an in-cluster client does.
func TestClientTrustsTheServiceAccountCAAndSendsTheToken(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token bool
		want  string
	}{
		{true, "ok\n"},
		{false, srv.URL + ": 401 Unauthorized Unauthorized\n"},
	} {
		var out bytes.Buffer
		c, err := newClient(dir, tc.token, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.run(context.Background(), []string{srv.URL}, 1, 0); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("with token %v printed %q, want %q", tc.token, out.String(), tc.want)
		}
	}
	// Without the CA the server's certificate is not trusted.
	c, err := newClient(t.TempDir(), false, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.run(context.Background(), []string{srv.URL}, 1, 0); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
}

func TestClientWaitsForTheFirstAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("up")) }))
	}()
	var out bytes.Buffer
	c, err := newClient(t.TempDir(), false, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.run(context.Background(), []string{"http://" + addr}, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if out.String() != "up\n" {
		t.Errorf("printed %q, want %q", out.String(), "up\n")
	}
	// Without waiting, a refused connection is the answer.
	if err := c.run(context.Background(), []string{"http://127.0.0.1:1"}, 1, 0); err == nil {
		t.Error("a refused connection without -wait succeeded")
	}
}
