package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serviceAccountDir is where a pod's automatic token volume is mounted.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// urlList collects repeated -get flags.
type urlList []string

func (u *urlList) String() string     { return strings.Join(*u, ",") }
func (u *urlList) Set(v string) error { *u = append(*u, v); return nil }

// client is testapp's client mode: it fetches URLs the way a program in a
// pod does, through the pod's resolv.conf (Go's own resolver: the search
// path completes short Service names) and, for https, trusting the
// cluster's CA from the service-account volume and presenting its token
// with -token.
type client struct {
	http  *http.Client
	token string
	out   io.Writer
}

func newClient(saDir string, withToken bool, out io.Writer) (*client, error) {
	c := &client{out: out}
	tr := &http.Transport{DisableKeepAlives: true}
	if ca, err := os.ReadFile(filepath.Join(saDir, "ca.crt")); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("no certificate in %s", filepath.Join(saDir, "ca.crt"))
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if withToken {
		b, err := os.ReadFile(filepath.Join(saDir, "token"))
		if err != nil {
			return nil, fmt.Errorf("-token: %w", err)
		}
		c.token = strings.TrimSpace(string(b))
	}
	c.http = &http.Client{Timeout: 5 * time.Second, Transport: tr}
	return c, nil
}

// get fetches url once and prints its body, prefixed with the URL's
// status when it is not 200.
func (c *client) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	body = bytes.TrimSpace(body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(c.out, "%s: %s %s\n", url, resp.Status, body)
		return nil
	}
	fmt.Fprintf(c.out, "%s\n", body)
	return nil
}

// run fetches each URL count times, after waiting up to wait for its first
// answer (a Service whose replicas are still starting refuses until then).
func (c *client) run(ctx context.Context, urls []string, count int, wait time.Duration) error {
	for _, url := range urls {
		deadline := time.Now().Add(wait)
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
			if err != nil {
				return err
			}
			resp, err := c.http.Do(req)
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: no answer within %s: %w", url, wait, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		for range count {
			if err := c.get(ctx, url); err != nil {
				return err
			}
		}
	}
	return nil
}
