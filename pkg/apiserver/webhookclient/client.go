// Package webhookclient is what the token-authentication and authorization
// webhooks share: POSTing a review object as JSON to a service named by a
// kubeconfig file (upstream's --authentication-token-webhook-config-file and
// --authorization-webhook-config-file), and remembering answers for a while
// so that a busy client does not cost a round trip per request.
package webhookclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// defaultTimeout bounds a review when the kubeconfig sets none: every API
// request waits on it.
const defaultTimeout = 10 * time.Second

// maxAnswer caps how much of an answer is read, so that a broken service
// cannot make the apiserver buffer without bound.
const maxAnswer = 1 << 20

// Client POSTs to one service.
type Client struct {
	url string
	hc  *http.Client
}

// New reads the kubeconfig at path: its current cluster's server is the URL
// reviews are POSTed to, with its TLS settings and client credentials.
func New(path string) (*Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{url: cfg.Host, hc: hc}, nil
}

// Post sends body, a JSON review, and decodes a 2xx answer into out.
func (c *Client) Post(ctx context.Context, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", c.url, resp.Status)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer of %s: %w", c.url, err)
	}
	return nil
}

// PostJSON is Post for a review that is not encoded yet.
func (c *Client) PostJSON(ctx context.Context, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.Post(ctx, body, out)
}
