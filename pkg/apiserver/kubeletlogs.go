package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
)

// storeLookup finds the node store.
type storeLookup interface {
	Store(gr schema.GroupResource) (*handler.Store, bool)
}

// KubeletLogs streams container logs from the kubelet running a pod.
type KubeletLogs struct {
	client *http.Client
	nodes  storeLookup
}

// NewKubeletLogs builds the kubelet client. With no CA the kubelet's
// serving certificate is not verified (kubelets serve self-signed ones by
// default); with a client certificate the kubelet can authenticate us.
func NewKubeletLogs(certFile, keyFile, caFile string) (*KubeletLogs, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet certificate authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kubelet certificate authority %s holds no PEM certificates", caFile)
		}
		tc.RootCAs = pool
	} else {
		tc.InsecureSkipVerify = true //nolint:gosec // kubelets serve self-signed certificates unless a CA is configured
	}
	return &KubeletLogs{client: &http.Client{Transport: &http.Transport{
		TLSClientConfig: tc, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		ResponseHeaderTimeout: 30 * time.Second,
	}}}, nil
}

var logParams = []string{"follow", "previous", "tailLines", "timestamps", "sinceSeconds", "sinceTime", "limitBytes"}

// StreamLogs implements handler.LogStreamer.
func (k *KubeletLogs) StreamLogs(r *http.Request, w http.ResponseWriter, nodeName, namespace, pod, container string) error {
	nodeGR := schema.GroupResource{Resource: "nodes"}
	st, ok := k.nodes.Store(nodeGR)
	if !ok {
		return apierrors.NewServiceUnavailable("nodes are not served")
	}
	node := &corev1.Node{}
	if err := st.Storage.Get(r.Context(), st.Key("", nodeName), node); err != nil {
		return handler.StorageError(err, nodeGR, nodeName)
	}
	host := nodeAddress(node)
	if host == "" {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("node %s reports no address", nodeName))
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port == 0 {
		port = 10250
	}
	q := url.Values{}
	for _, p := range logParams {
		if v := r.URL.Query().Get(p); v != "" {
			q.Set(p, v)
		}
	}
	u := url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port)),
		Path: "/containerLogs/" + namespace + "/" + pod + "/" + container, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("cannot reach the kubelet on node %s: %v", nodeName, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return kubeletLogError(resp.StatusCode, nodeName, pod, strings.TrimSpace(string(msg)))
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return nil // the stream ended; the status line is already out
		}
	}
}

func nodeAddress(node *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// kubeletLogError passes the kubelet's answer on, so that the user reads
// why there is no log ("container "c" in pod "p" is waiting to start:
// ContainerCreating"), as upstream does for its kubelet's 400s.
func kubeletLogError(code int, node, pod, msg string) error {
	switch {
	case code == http.StatusBadRequest:
		return apierrors.NewBadRequest(msg)
	case code == http.StatusNotFound:
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: msg, Details: &metav1.StatusDetails{Kind: "pods", Name: pod},
		}}
	case code >= 500:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("the kubelet on node %s failed: %s", node, msg))
	}
	return apierrors.NewGenericServerResponse(code, "get", schema.GroupResource{Resource: "pods"}, pod, msg, 0, false)
}
