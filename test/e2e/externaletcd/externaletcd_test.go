//go:build e2e

// Package externaletcd runs the kube-lite-apiserver binary on Debian's etcd
// server (package etcd-server), with and without TLS, and checks through
// client-go that objects are stored there and watches see changes.
package externaletcd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/etcd"
	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

var apiserverBin string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "kube-lite-e2e-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	apiserverBin = filepath.Join(tmp, "kube-lite-apiserver")
	if err := e2eutil.BuildBinaries(tmp, "./cmd/kube-lite-apiserver"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

func TestAPIServerOnExternalEtcd(t *testing.T) {
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		msg := "the etcd binary is not installed (Debian package etcd-server; run `hack/deps.sh base`)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, tc := range []struct {
		name string
		tls  bool
	}{
		{"TLS with client certificates", true},
		{"plain HTTP on loopback", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			et := startEtcd(t, etcdBin, dir, tc.tls)
			cs := startAPIServer(t, dir, et)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cms := cs.CoreV1().ConfigMaps("default")

			created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stored"}, Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			got, err := cms.Get(ctx, "stored", metav1.GetOptions{})
			if err != nil || got.Data["k"] != "v1" || got.UID != created.UID {
				t.Fatalf("get = %+v, %v; want the created object", got, err)
			}

			// The object is in the external etcd, under upstream's key layout.
			ec, err := etcd.NewClient(ctx, et.clientConfig)
			if err != nil {
				t.Fatal(err)
			}
			defer ec.Close()
			resp, err := ec.Get(ctx, "/registry/configmaps/default/stored")
			if err != nil {
				t.Fatalf("read the external etcd: %v", err)
			}
			if len(resp.Kvs) != 1 || strconv.FormatInt(resp.Kvs[0].ModRevision, 10) != created.ResourceVersion {
				t.Fatalf("etcd has %d keys for the object (want 1 at revision %s)", len(resp.Kvs), created.ResourceVersion)
			}

			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion, FieldSelector: "metadata.name=stored"})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()
			if _, err := cms.Patch(ctx, "stored", types.MergePatchType, []byte(`{"data":{"k":"v2"}}`), metav1.PatchOptions{}); err != nil {
				t.Fatalf("patch: %v", err)
			}
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("watch closed before the change")
				}
				cm, isCM := ev.Object.(*corev1.ConfigMap)
				if ev.Type != watch.Modified || !isCM || cm.Data["k"] != "v2" {
					t.Fatalf("event %s %+v, want MODIFIED with k=v2", ev.Type, ev.Object)
				}
			case <-ctx.Done():
				t.Fatal("no watch event for the change")
			}
		})
	}
}

// TestWatchFromZeroHasTheBootstrapNamespaces: right after a fresh
// apiserver on Debian's etcd is ready, a watch of namespaces from
// resourceVersion 0 delivers every system namespace, and so does every
// fresh start. etcd before 3.4.25 answered a progress request with its
// current revision before a watch catching up had its events
// (etcd-io/etcd#15220); when the apiserver asked anyway, the watch cache's
// watch took the answer for a bookmark and skipped the first namespaces
// written, and controllers never saw them.
func TestWatchFromZeroHasTheBootstrapNamespaces(t *testing.T) {
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("the etcd binary is not installed (Debian package etcd-server; run `hack/deps.sh base`)")
	}
	system := []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}
	const starts = 8
	for i := range starts {
		t.Run(fmt.Sprintf("start %d", i+1), func(t *testing.T) {
			dir := t.TempDir()
			cs := startAPIServer(t, dir, startEtcd(t, etcdBin, dir, false))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nss := cs.CoreV1().Namespaces()
			w, err := nss.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()
			// A namespace created after the watch started comes after
			// everything created before it: once it is seen, every system
			// namespace must have been.
			marker, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-marker"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create the marker namespace: %v", err)
			}
			seen := map[string]bool{}
			for !seen[marker.Name] {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatalf("watch closed; saw %v", seen)
					}
					if ns, isNS := ev.Object.(*corev1.Namespace); isNS && ev.Type == watch.Added {
						seen[ns.Name] = true
					}
				case <-ctx.Done():
					t.Fatalf("no event for the marker namespace; saw %v", seen)
				}
			}
			var missing []string
			for _, name := range system {
				if !seen[name] {
					missing = append(missing, name)
				}
			}
			if len(missing) > 0 {
				list, err := nss.List(ctx, metav1.ListOptions{})
				names := []string{}
				if err == nil {
					for _, ns := range list.Items {
						names = append(names, ns.Name)
					}
				}
				t.Fatalf("the watch from resourceVersion 0 missed %v (saw %v; a list has %v)", missing, seen, names)
			}
		})
	}
}

type etcdServer struct {
	clientConfig etcd.Config
}

// startEtcd runs one etcd member on loopback; with useTLS clients must
// present a certificate from the test CA.
func startEtcd(t *testing.T, bin, dir string, useTLS bool) etcdServer {
	t.Helper()
	clientPort, peerPort := e2eutil.MustFreePort(t), e2eutil.MustFreePort(t)
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	clientURL := scheme + "://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	args := []string{"--name=e2e", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL, "--unsafe-no-fsync"}
	srv := etcdServer{clientConfig: etcd.Config{Endpoints: []string{clientURL}}}
	if useTLS {
		pkiDir := filepath.Join(dir, "etcd-pki")
		ca, err := pki.EnsureCA(pkiDir, pki.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		serverCert := writePair(t, pkiDir, "server", ca, pki.CertSpec{CommonName: "etcd", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Usages: []pki.Usage{pki.UsageServer}})
		clientCert := writePair(t, pkiDir, "client", ca, pki.CertSpec{CommonName: "kube-apiserver-etcd-client", Usages: []pki.Usage{pki.UsageClient}})
		caFile := filepath.Join(pkiDir, pki.CACertFile)
		args = append(args, "--cert-file="+serverCert[0], "--key-file="+serverCert[1], "--trusted-ca-file="+caFile, "--client-cert-auth")
		srv.clientConfig.CAFile, srv.clientConfig.CertFile, srv.clientConfig.KeyFile = caFile, clientCert[0], clientCert[1]
	}
	startProcess(t, filepath.Join(dir, "etcd.log"), bin, args...)
	return srv
}

// writePair issues a certificate and returns the paths of it and its key.
func writePair(t *testing.T, dir, name string, ca *pki.CA, spec pki.CertSpec) [2]string {
	t.Helper()
	kp, err := pki.IssueCert(ca, spec)
	if err != nil {
		t.Fatal(err)
	}
	paths := [2]string{filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")}
	if err := os.WriteFile(paths[0], kp.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths[1], kp.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return paths
}

func startAPIServer(t *testing.T, dir string, et etcdServer) kubernetes.Interface {
	t.Helper()
	clientCADir := filepath.Join(dir, "client-ca")
	clientCA, err := pki.EnsureCA(clientCADir, pki.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pki.IssueCert(clientCA, pki.CertSpec{CommonName: "e2e-admin", Organizations: []string{"system:masters"}, Usages: []pki.Usage{pki.UsageClient}})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--client-ca-file=" + filepath.Join(clientCADir, pki.CACertFile),
		"--etcd-servers=" + et.clientConfig.Endpoints[0]}
	if et.clientConfig.CAFile != "" {
		args = append(args, "--etcd-cafile="+et.clientConfig.CAFile, "--etcd-certfile="+et.clientConfig.CertFile, "--etcd-keyfile="+et.clientConfig.KeyFile)
	}
	srv, err := e2eutil.StartAPIServer(apiserverBin, dir, args...)
	if err != nil {
		etcdLog, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
		t.Fatalf("%v\netcd log (tail):\n%s", err, e2eutil.Tail(etcdLog, 3000))
	}
	t.Cleanup(srv.Stop)
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: srv.CAPEM, CertData: admin.CertPEM, KeyData: admin.KeyPEM}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// startProcess starts bin, logging to logPath, and stops it when the test
// ends.
func startProcess(t *testing.T, logPath, bin string, args ...string) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
	})
}
