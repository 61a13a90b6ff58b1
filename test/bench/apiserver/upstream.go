package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/test/bench/harness"
)

// startUpstream starts upstream's etcd and kube-apiserver from dir, with
// the flags a kubeadm control plane gives them that matter here (x509
// client certificates, Node and RBAC authorization, default admission and
// API priority and fairness), on loopback. Their CPU is summed as the
// server's: kube-lite runs etcd inside its apiserver process.
func startUpstream(ctx context.Context, o options) (_ *server, err error) {
	etcdBin, apiBin := filepath.Join(o.upstream, "etcd"), filepath.Join(o.upstream, "kube-apiserver")
	for _, b := range []string{etcdBin, apiBin} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("%w (hack/upstream-apiserver.sh builds upstream's binaries)", err)
		}
	}
	dir, err := os.MkdirTemp("", "kube-lite-bench-upstream-")
	if err != nil {
		return nil, err
	}
	srv := &server{name: "upstream", dir: dir, keep: o.keep}
	defer func() {
		if err != nil {
			srv.stop() // its processes and, unless -keep, its directory
		}
	}()
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = harness.FreePort(); err != nil {
			return nil, err
		}
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcd, err := harness.StartProcess(etcdBin, []string{
		"--name=bench", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=bench=" + peerURL, "--log-level=warn",
	}, filepath.Join(dir, "etcd.log"), nil)
	if err != nil {
		return nil, err
	}
	srv.procs = []*harness.Process{etcd}
	srv.etcdEndpoint = clientURL
	wait, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := waitEtcd(wait, clientURL); err != nil {
		return nil, srv.logged(fmt.Errorf("upstream etcd: %w", err), filepath.Join(dir, "etcd.log"))
	}

	clientCAFile, admin, ca, err := harness.Admin(dir)
	if err != nil {
		return nil, err
	}
	files, err := upstreamFiles(dir, ca)
	if err != nil {
		return nil, err
	}
	apiLog := filepath.Join(dir, "kube-apiserver.log")
	api, err := harness.StartProcess(apiBin, []string{
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[2]),
		"--etcd-servers=" + clientURL,
		"--tls-cert-file=" + files.servingCert, "--tls-private-key-file=" + files.servingKey,
		"--client-ca-file=" + clientCAFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files.saKey, "--service-account-signing-key-file=" + files.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
	}, apiLog, nil)
	if err != nil {
		return nil, err
	}
	// server.stop stops the last process first: the apiserver, then etcd.
	srv.procs = []*harness.Process{etcd, api}
	srv.rest = o.restConfig(ports[2], clientCAFile, admin)
	if err := waitReady(wait, srv); err != nil {
		return nil, srv.logged(err, apiLog)
	}
	// A fresh kube-apiserver keeps creating its bootstrap objects (RBAC
	// roles, priority levels, ...) for a while after /readyz; measuring
	// then would charge that work to the creates.
	settle(wait, srv)
	return srv, nil
}

type upstreamPaths struct{ servingCert, servingKey, saKey string }

// upstreamFiles writes kube-apiserver's serving certificate (from the
// bench's CA, which the client trusts) and its service-account key.
func upstreamFiles(dir string, ca *pki.CA) (upstreamPaths, error) {
	p := upstreamPaths{
		servingCert: filepath.Join(dir, "serving.crt"),
		servingKey:  filepath.Join(dir, "serving.key"),
		saKey:       filepath.Join(dir, "sa.key"),
	}
	serving, err := pki.IssueCert(ca, pki.CertSpec{CommonName: "kube-apiserver", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: []pki.Usage{pki.UsageServer}})
	if err != nil {
		return p, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, err
	}
	saPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	for path, data := range map[string][]byte{p.servingCert: serving.CertPEM, p.servingKey: serving.KeyPEM, p.saKey: saPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return p, err
		}
	}
	return p, nil
}

func waitEtcd(ctx context.Context, endpoint string) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Status(sctx, endpoint)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settle waits until the server uses less than a tenth of a core over a
// second, or the context ends.
func settle(ctx context.Context, s *server) {
	prev := s.cpu()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		cur := s.cpu()
		used, _, _ := cur.sub(prev)
		if used < 100*time.Millisecond {
			return
		}
		prev = cur
	}
}
