package pki

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Identities of the control plane. Kubernetes authenticates a client
// certificate as user CN in groups O; these are the names upstream RBAC and
// the Node authorizer expect.
const (
	AdminUser                = "kubernetes-admin"
	MastersGroup             = "system:masters"
	SchedulerUser            = "system:kube-scheduler"
	ControllerManagerUser    = "system:kube-controller-manager"
	ProxyUser                = "system:kube-proxy"
	APIServerKubeletClient   = "kube-apiserver-kubelet-client"
	NodesGroup               = "system:nodes"
	NodeUserPrefix           = "system:node:"
	apiServerCommonName      = "kube-apiserver"
	serviceAccountKeyFile    = "sa.key"
	serviceAccountPubKeyFile = "sa.pub"
)

// Layout names the files of a cluster PKI directory, so that components find
// them without repeating file names.
type Layout string

func (l Layout) path(name string) string { return filepath.Join(string(l), name) }

func (l Layout) CACert() string                     { return l.path(CACertFile) }
func (l Layout) CAKey() string                      { return l.path(CAKeyFile) }
func (l Layout) APIServerCert() string              { return l.path("apiserver.crt") }
func (l Layout) APIServerKey() string               { return l.path("apiserver.key") }
func (l Layout) APIServerKubeletClientCert() string { return l.path("apiserver-kubelet-client.crt") }
func (l Layout) APIServerKubeletClientKey() string  { return l.path("apiserver-kubelet-client.key") }
func (l Layout) AdminKubeconfig() string            { return l.path("admin.kubeconfig") }
func (l Layout) SchedulerKubeconfig() string        { return l.path("scheduler.kubeconfig") }
func (l Layout) ControllerManagerKubeconfig() string {
	return l.path("controller-manager.kubeconfig")
}
func (l Layout) ProxyKubeconfig() string           { return l.path("proxy.kubeconfig") }
func (l Layout) NodeKubeconfig(node string) string { return l.path("node-" + node + ".kubeconfig") }
func (l Layout) KubeletCert(node string) string    { return l.path("kubelet-" + node + ".crt") }
func (l Layout) KubeletKey(node string) string     { return l.path("kubelet-" + node + ".key") }

// ServiceAccountKey is the RSA key the apiserver signs service account
// tokens with (--service-account-signing-key-file).
func (l Layout) ServiceAccountKey() string { return l.path(serviceAccountKeyFile) }

// ServiceAccountPublicKey verifies those tokens (--service-account-key-file).
func (l Layout) ServiceAccountPublicKey() string { return l.path(serviceAccountPubKeyFile) }

// Options says what cluster WriteClusterPKI provisions.
type Options struct {
	// APIServerURL is the server every kubeconfig points at, e.g.
	// https://127.0.0.1:6443. Its host is added to the apiserver's SANs.
	APIServerURL string
	// APIServerHosts are further names and addresses of the apiserver.
	APIServerHosts []string
	// Nodes get a kubeconfig (system:node:<name>) and a kubelet serving cert.
	Nodes []string
	// NodeHosts lists the addresses and extra names of a node's kubelet.
	NodeHosts map[string][]string
	// Validity of issued certificates; zero means DefaultValidity.
	Validity time.Duration
}

// Validate reports the first problem with o in terms a user can act on.
func (o Options) Validate() error {
	if _, err := apiServerHost(o.APIServerURL); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, n := range o.Nodes {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return fmt.Errorf("invalid node name %q: %s", n, strings.Join(errs, "; "))
		}
		if seen[n] {
			return fmt.Errorf("node %q listed twice", n)
		}
		seen[n] = true
	}
	for n := range o.NodeHosts {
		if !seen[n] {
			return fmt.Errorf("addresses given for node %q, which is not in the node list", n)
		}
	}
	if o.Validity < 0 {
		return fmt.Errorf("negative certificate validity %s", o.Validity)
	}
	return nil
}

func apiServerHost(serverURL string) (string, error) {
	if serverURL == "" {
		return "", errors.New("apiserver URL is required")
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("invalid apiserver URL %q: %w", serverURL, err)
	}
	if u.Scheme != "https" || u.Hostname() == "" {
		return "", fmt.Errorf("invalid apiserver URL %q: want https://host[:port]", serverURL)
	}
	return u.Hostname(), nil
}

// Action is what WriteClusterPKI did with one file.
type Action string

const (
	Created  Action = "created"
	Kept     Action = "kept"
	Reissued Action = "reissued"
	Updated  Action = "updated"
)

// FileResult reports one file written or kept, and why it was reissued.
type FileResult struct {
	Path   string
	Action Action
	Reason string
}

// Result lists the files of the PKI in the order they were handled.
type Result struct {
	Layout Layout
	Files  []FileResult
}

func (r *Result) add(path string, a Action, reason string) {
	r.Files = append(r.Files, FileResult{Path: path, Action: a, Reason: reason})
}

// WriteClusterPKI provisions every certificate, key and kubeconfig a
// kube-lite cluster needs into dir. It is idempotent: the CA is never
// replaced, certificates that are valid and still name what is asked for are
// kept, others are reissued (a changed SAN, a renamed group, near expiry),
// and new nodes are added. Nodes no longer listed keep their files.
func WriteClusterPKI(ctx context.Context, dir string, o Options, opts ...Option) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := newSettings(opts)
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &Result{Layout: Layout(dir)}
	l := res.Layout

	ca, created, err := ensureCA(dir, s)
	if err != nil {
		return nil, err
	}
	caAction := Kept
	if created {
		caAction = Created
	}
	res.add(l.CACert(), caAction, "")
	res.add(l.CAKey(), caAction, "")

	host, _ := apiServerHost(o.APIServerURL) // checked by Validate
	// Pods reach the apiserver by the names of the default "kubernetes" Service.
	inCluster := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	dns, ips := splitHosts(slices.Concat([]string{host, "localhost", "127.0.0.1"}, o.APIServerHosts, inCluster))
	leaf := func(cn string, orgs []string, usage Usage) CertSpec {
		return CertSpec{CommonName: cn, Organizations: orgs, Usages: []Usage{usage}, Validity: o.Validity}
	}
	apiServer := leaf(apiServerCommonName, nil, UsageServer)
	apiServer.DNSNames, apiServer.IPs = dns, ips

	steps := []func() error{
		func() error {
			_, err := ensureKeyPair(res, l.APIServerCert(), l.APIServerKey(), ca, apiServer)
			return err
		},
		func() error {
			_, err := ensureKeyPair(res, l.APIServerKubeletClientCert(), l.APIServerKubeletClientKey(), ca,
				leaf(APIServerKubeletClient, []string{MastersGroup}, UsageClient))
			return err
		},
		func() error { return ensureServiceAccountKey(res, l, s) },
		func() error {
			return ensureClient(res, l.path("admin"), l.AdminKubeconfig(), ca, o.APIServerURL,
				leaf(AdminUser, []string{MastersGroup}, UsageClient))
		},
		func() error {
			return ensureClient(res, l.path("scheduler"), l.SchedulerKubeconfig(), ca, o.APIServerURL,
				leaf(SchedulerUser, nil, UsageClient))
		},
		func() error {
			return ensureClient(res, l.path("controller-manager"), l.ControllerManagerKubeconfig(), ca, o.APIServerURL,
				leaf(ControllerManagerUser, nil, UsageClient))
		},
		// One identity for every node's kube-lite-proxy, as upstream's
		// system:kube-proxy user bound to system:node-proxier.
		func() error {
			return ensureClient(res, l.path("proxy"), l.ProxyKubeconfig(), ca, o.APIServerURL,
				leaf(ProxyUser, nil, UsageClient))
		},
	}
	for _, n := range o.Nodes {
		steps = append(steps,
			func() error {
				return ensureClient(res, l.path("node-"+n), l.NodeKubeconfig(n), ca, o.APIServerURL,
					leaf(NodeUserPrefix+n, []string{NodesGroup}, UsageClient))
			},
			func() error {
				serving := leaf(NodeUserPrefix+n, []string{NodesGroup}, UsageServer)
				serving.DNSNames, serving.IPs = splitHosts(append([]string{n}, o.NodeHosts[n]...))
				_, err := ensureKeyPair(res, l.KubeletCert(n), l.KubeletKey(n), ca, serving)
				return err
			},
		)
	}
	for _, step := range steps {
		// Key generation is the slow part; stop between files, never mid-file.
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cluster PKI: %w", err)
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ensureKeyPair keeps the pair at certPath/keyPath when it still fits spec
// and otherwise issues a new one.
func ensureKeyPair(res *Result, certPath, keyPath string, ca *CA, spec CertSpec) (*KeyPair, error) {
	action, reason := Created, ""
	kp, absent, err := loadKeyPair(certPath, keyPath)
	switch {
	case absent:
	case err != nil:
		action, reason = Reissued, err.Error()
	default:
		if reason = mismatch(kp, ca, spec); reason == "" {
			if err := os.Chmod(keyPath, privateMode); err != nil {
				return nil, fmt.Errorf("cluster PKI: %w", err)
			}
			res.add(certPath, Kept, "")
			res.add(keyPath, Kept, "")
			return kp, nil
		}
		action = Reissued
	}

	kp, err = IssueCert(ca, spec)
	if err != nil {
		return nil, err
	}
	// Key first: a crash in between leaves a mismatched pair, which the next
	// run detects and reissues.
	if err := writeFileAtomic(keyPath, kp.KeyPEM, privateMode); err != nil {
		return nil, fmt.Errorf("cluster PKI: %w", err)
	}
	if err := writeFileAtomic(certPath, kp.CertPEM, publicMode); err != nil {
		return nil, fmt.Errorf("cluster PKI: %w", err)
	}
	ca.logger.Info("issued certificate", "cert", certPath, "action", action, "reason", reason,
		"commonName", spec.CommonName, "organizations", spec.Organizations)
	res.add(certPath, action, reason)
	res.add(keyPath, action, reason)
	return kp, nil
}

// loadKeyPair reads a pair from disk; absent reports that neither file
// exists, and err describes a half-present or unreadable pair.
func loadKeyPair(certPath, keyPath string) (kp *KeyPair, absent bool, err error) {
	certData, certErr := os.ReadFile(certPath)
	keyData, keyErr := os.ReadFile(keyPath)
	if errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist) {
		return nil, true, nil
	}
	if certErr != nil {
		return nil, false, fmt.Errorf("certificate unreadable: %w", certErr)
	}
	if keyErr != nil {
		return nil, false, fmt.Errorf("key unreadable: %w", keyErr)
	}
	cert, err := ParseCertPEM(certData)
	if err != nil {
		return nil, false, err
	}
	key, err := ParseKeyPEM(keyData)
	if err != nil {
		return nil, false, err
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: certData, KeyPEM: keyData}, false, nil
}

// ensureClient keeps or issues base.crt/base.key and writes a kubeconfig
// that embeds them.
func ensureClient(res *Result, base, kubeconfigPath string, ca *CA, serverURL string, spec CertSpec) error {
	kp, err := ensureKeyPair(res, base+".crt", base+".key", ca, spec)
	if err != nil {
		return err
	}
	existed, err := exists(kubeconfigPath)
	if err != nil {
		return fmt.Errorf("cluster PKI: %w", err)
	}
	changed, err := WriteKubeconfig(kubeconfigPath, Kubeconfig{
		ServerURL:     serverURL,
		CAPEM:         ca.CertPEM,
		User:          spec.CommonName,
		ClientCertPEM: kp.CertPEM,
		ClientKeyPEM:  kp.KeyPEM,
	})
	if err != nil {
		return err
	}
	switch {
	case !existed:
		res.add(kubeconfigPath, Created, "")
	case changed:
		res.add(kubeconfigPath, Updated, "")
	default:
		res.add(kubeconfigPath, Kept, "")
	}
	return nil
}

// ensureServiceAccountKey keeps an existing RSA signing key (replacing it
// would invalidate every issued token) and (re)derives sa.pub from it.
func ensureServiceAccountKey(res *Result, l Layout, s settings) error {
	keyPath, pubPath := l.ServiceAccountKey(), l.ServiceAccountPublicKey()
	var key *rsa.PrivateKey
	action := Created
	switch signer, err := LoadKeyFile(keyPath); {
	case err == nil:
		rsaKey, ok := signer.(*rsa.PrivateKey)
		if !ok {
			return fmt.Errorf("cluster PKI: %s is a %T key; service account tokens (RS256) need RSA: remove it to create one", keyPath, signer)
		}
		key, action = rsaKey, Kept
		if err := os.Chmod(keyPath, privateMode); err != nil {
			return fmt.Errorf("cluster PKI: %w", err)
		}
	case errors.Is(err, os.ErrNotExist):
		if key, err = newRSAKey(); err != nil {
			return err
		}
		keyPEM, err := EncodeKeyPEM(key)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(keyPath, keyPEM, privateMode); err != nil {
			return fmt.Errorf("cluster PKI: %w", err)
		}
		s.logger.Info("created service account signing key", "key", keyPath)
	default:
		return fmt.Errorf("cluster PKI: service account key: %w", err)
	}
	res.add(keyPath, action, "")

	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("cluster PKI: marshal service account public key: %w", err)
	}
	pubExisted, err := exists(pubPath)
	if err != nil {
		return fmt.Errorf("cluster PKI: %w", err)
	}
	changed, err := writeIfChanged(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), publicMode)
	if err != nil {
		return fmt.Errorf("cluster PKI: %w", err)
	}
	switch {
	case !pubExisted:
		res.add(pubPath, Created, "")
	case changed:
		res.add(pubPath, Updated, "")
	default:
		res.add(pubPath, Kept, "")
	}
	return nil
}
