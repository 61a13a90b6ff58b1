// Package apiserverextra checks the parts of the apiserver contract
// (DESIGN.md, "The API is Kubernetes' API") that a client observes through
// HTTP: patch types, deletion, subresources, errors, tables and discovery.
package apiserverextra

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "web", Image: "kube-lite.local/busybox:1.35"},
				{Name: "sidecar", Image: "kube-lite.local/busybox:1.35"},
			},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
}

func newDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "kube-lite.local/busybox:1.35"}}},
			},
		},
	}
}

// rawClient sends hand-made requests, for what typed clients cannot express
// (malformed bodies, odd verbs, Accept headers, oversized bodies).
type rawClient struct {
	base string
	http *http.Client
}

func newRaw(t *testing.T, s *framework.Server) *rawClient {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Config.TLSClientConfig.CAData) {
		t.Fatal("no CA in the test server's config")
	}
	return &rawClient{base: s.URL, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

type response struct {
	code   int
	body   []byte
	header http.Header
}

// status decodes the body as a metav1.Status, the shape of every error.
func (r response) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("body is not a Status (%v): %s", err, r.body)
	}
	return st
}

func (c *rawClient) do(t *testing.T, method, path, contentType string, body []byte, header ...string) response {
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
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{code: resp.StatusCode, body: out, header: resp.Header}
}
