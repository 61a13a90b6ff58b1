package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "c", Image: "kube-lite.local/busybox:1.35"}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawClient sends hand-made HTTP requests, for what typed clients cannot
// express (malformed bodies, odd verbs, Accept headers).
type rawClient struct {
	base string
	http *http.Client
}

func newRaw(t *testing.T, s *framework.Server) *rawClient {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Config.TLSClientConfig.CAData) {
		t.Fatal("no CA in test config")
	}
	return &rawClient{base: s.URL, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

func (c *rawClient) do(t *testing.T, method, path, contentType string, body []byte, header ...string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header
}
