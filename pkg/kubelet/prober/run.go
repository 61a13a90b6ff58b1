package prober

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Execer runs a command in a container (CRI ExecSync).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

// NetRunner runs exec, httpGet and tcpSocket probes for real.
type NetRunner struct {
	Exec   Execer
	client *http.Client
}

// NewNetRunner returns a runner that execs through e.
func NewNetRunner(e Execer) *NetRunner {
	return &NetRunner{Exec: e, client: &http.Client{
		// Probes must see the redirect status, like upstream (3xx is success).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableKeepAlives: true},
	}}
}

// Run runs probe against target once; ctx carries the probe's timeout.
func (r *NetRunner) Run(ctx context.Context, t Target, p *v1.Probe) (Result, string) {
	switch {
	case p.Exec != nil:
		deadline, _ := ctx.Deadline()
		stdout, stderr, code, err := r.Exec.ExecSync(ctx, t.ContainerID, p.Exec.Command, time.Until(deadline))
		if err != nil {
			return Failure, err.Error()
		}
		if code != 0 {
			// Upstream's event says what the command printed, nothing more:
			// "Liveness probe failed: cat: can't open '/tmp/healthy': ...".
			return Failure, string(stdout) + string(stderr)
		}
		return Success, ""
	case p.HTTPGet != nil:
		return r.httpGet(ctx, t, p.HTTPGet)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.Container)
		if err != nil {
			return Failure, err.Error()
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return Failure, err.Error()
		}
		_ = conn.Close()
		return Success, ""
	}
	return Unknown, "probe has no handler"
}

func (r *NetRunner) httpGet(ctx context.Context, t Target, g *v1.HTTPGetAction) (Result, string) {
	port, err := resolvePort(g.Port, t.Container)
	if err != nil {
		return Failure, err.Error()
	}
	host := g.Host
	if host == "" {
		host = t.PodIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	u, err = u.Parse(path)
	if err != nil {
		return Failure, err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Failure, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/1.36")
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return Failure, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return Success, ""
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// resolvePort turns a number or a named container port into a number.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}
