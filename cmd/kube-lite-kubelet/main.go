// Command kube-lite-kubelet is kube-lite's node agent: it registers its
// Node and runs the pods bound to it through containerd's CRI.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/component"
	"github.com/kube-lite/kube-lite/pkg/kubelet"
	"github.com/kube-lite/kube-lite/pkg/kubelet/cri"
	"github.com/kube-lite/kube-lite/pkg/kubelet/images"
	"github.com/kube-lite/kube-lite/pkg/kubelet/server"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// Options are the kubelet's flags, named as upstream's.
type Options struct {
	Kubeconfig        string
	NodeName          string
	NodeIP            string
	RuntimeEndpoint   string
	RootDir           string
	PodCIDR           string
	Taints            []string
	NodeLabels        map[string]string
	ImageDir          string
	CNIConfDir        string
	CNIBinDir         string
	CNIBridge         string
	NonMasqueradeCIDR string
	AuthorizationMode string
	Address           string
	Port              int
	HealthzPort       int
	TLSCertFile       string
	TLSKeyFile        string
	ClientCAFile      string
	PodInfraImage     string
	CgroupRoot        string
	ClusterDomain     string
	ClusterDNS        []string
	ResolvConf        string
	MaxPods           int
	Snapshotter       string
	CrashLoopInitial  time.Duration
	CrashLoopMax      time.Duration
	ImagePullInitial  time.Duration
	SyncFrequency     time.Duration
	NodeStatusUpdate  time.Duration
	Verbosity         int
	RuntimeWait       time.Duration
	RequestTimeoutCRI time.Duration

	taints []v1.Taint
}

func (o *Options) AddFlags(fs *pflag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig for the API server.")
	fs.StringVar(&o.NodeName, "node-name", strings.ToLower(host), "Name of this Node.")
	fs.StringVar(&o.NodeIP, "node-ip", "", "IP address of the node (default: the address of the default route's interface).")
	fs.StringVar(&o.RuntimeEndpoint, "container-runtime-endpoint", "unix:///run/containerd/containerd.sock", "CRI endpoint of the container runtime.")
	fs.StringVar(&o.RootDir, "root-dir", "/var/lib/kube-lite/kubelet", "Directory for volumes, pod logs and the kubelet's files.")
	fs.StringVar(&o.PodCIDR, "pod-cidr", "", "CIDR for pod IPs on this node; empty: use the podCIDR the controller-manager assigns the Node.")
	fs.StringSliceVar(&o.Taints, "register-with-taints", nil, "Taints to register the Node with (key=value:Effect,...).")
	fs.StringToStringVar(&o.NodeLabels, "node-labels", nil, "Labels to register the Node with.")
	fs.StringVar(&o.ImageDir, "image-dir", "", "Import every OCI image tarball in this directory into containerd at start.")
	fs.StringVar(&o.CNIConfDir, "cni-conf-dir", "/etc/cni/net.d", "Where containerd's CRI plugin reads the CNI config.")
	fs.StringVar(&o.CNIBinDir, "cni-bin-dir", "/usr/lib/cni", "Where the CNI plugin binaries are.")
	fs.StringVar(&o.CNIBridge, "cni-bridge", "cni0", "Host bridge of the pod network (several kubelets on one host need one each).")
	fs.StringVar(&o.AuthorizationMode, "authorization-mode", "Webhook", "Who may use the kubelet API (with --client-ca-file): Webhook asks the apiserver with SubjectAccessReviews; AlwaysAllow lets every cluster certificate in.")
	fs.StringVar(&o.NonMasqueradeCIDR, "non-masquerade-cidr", "10.0.0.0/8", "Traffic from pods to addresses outside this range is masqueraded to the node's address; empty disables.")
	fs.StringVar(&o.Address, "address", "0.0.0.0", "IP address to serve the kubelet API on.")
	fs.IntVar(&o.Port, "port", 10250, "Port of the kubelet API (HTTPS).")
	fs.IntVar(&o.HealthzPort, "healthz-port", 10248, "Port of the plain-HTTP /healthz on localhost; 0 disables.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "Serving certificate (default: self-signed in <root-dir>/pki).")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", "", "Serving key.")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", "", "CA bundle for client certificates; when set, the API needs a verified client certificate.")
	fs.StringVar(&o.PodInfraImage, "pod-infra-container-image", "kube-lite.local/pause:3.10", "Sandbox image (containerd's sandbox_image must match).")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", "/", "Root cgroup for pods.")
	fs.StringVar(&o.ResolvConf, "resolv-conf", "/etc/resolv.conf", "Resolver configuration file used as the basis for the DNS resolution configuration of pods with dnsPolicy Default (and of ClusterFirst pods without --cluster-dns); ClusterFirst pods add its search domains after the cluster's.")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", "cluster.local", "Domain of the cluster's services: pods with dnsPolicy ClusterFirst search <namespace>.svc.<domain>, svc.<domain> and <domain>; a pod with a subdomain is named <hostname>.<subdomain>.<namespace>.svc.<domain> in its /etc/hosts (and hostname with setHostnameAsFQDN).")
	fs.StringSliceVar(&o.ClusterDNS, "cluster-dns", []string{"10.96.0.10"}, "Comma-separated IP addresses of the cluster DNS servers, the only nameservers of pods with dnsPolicy ClusterFirst (the kube-dns Service, the 10th address of the default service range); empty: such pods use the node's resolver, with a MissingClusterDNS warning.")
	fs.IntVar(&o.MaxPods, "max-pods", 110, "Number of pods this node runs at most.")
	fs.StringVar(&o.Snapshotter, "snapshotter", "overlayfs", "containerd snapshotter to unpack imported images for.")
	fs.DurationVar(&o.CrashLoopInitial, "crashloop-backoff-initial", 10*time.Second, "First restart back-off of a crashing container.")
	fs.DurationVar(&o.CrashLoopMax, "crashloop-backoff-max", 5*time.Minute, "Longest restart back-off.")
	fs.DurationVar(&o.ImagePullInitial, "image-pull-backoff-initial", 10*time.Second, "First back-off after a failed image pull.")
	fs.DurationVar(&o.SyncFrequency, "sync-frequency", 10*time.Second, "How often each pod is resynced without an event.")
	fs.DurationVar(&o.NodeStatusUpdate, "node-status-update-frequency", 10*time.Second, "How often the Node status is computed.")
	fs.DurationVar(&o.RuntimeWait, "runtime-wait", 60*time.Second, "How long to wait for the container runtime at start.")
	fs.IntVarP(&o.Verbosity, "v", "v", 0, "Log verbosity (4 and up: debug).")
}

func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name is required"))
	}
	if o.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(o.PodCIDR); err != nil {
			errs = append(errs, fmt.Errorf("--pod-cidr: %w", err))
		}
	}
	if o.AuthorizationMode != "Webhook" && o.AuthorizationMode != "AlwaysAllow" {
		errs = append(errs, fmt.Errorf("--authorization-mode %q: want Webhook or AlwaysAllow", o.AuthorizationMode))
	}
	if o.NonMasqueradeCIDR != "" {
		if _, _, err := net.ParseCIDR(o.NonMasqueradeCIDR); err != nil {
			errs = append(errs, fmt.Errorf("--non-masquerade-cidr: %w", err))
		}
	}
	for _, ip := range o.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, fmt.Errorf("--cluster-dns: %q is not an IP address", ip))
		}
	}
	if o.NodeIP != "" && net.ParseIP(o.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("--node-ip %q is not an IP address", o.NodeIP))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	for _, t := range o.Taints {
		taint, err := parseTaint(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.taints = append(o.taints, taint)
	}
	return errors.Join(errs...)
}

// parseTaint parses key[=value]:Effect.
func parseTaint(s string) (v1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return v1.Taint{}, fmt.Errorf("taint %q: want key[=value]:Effect", s)
	}
	switch v1.TaintEffect(effect) {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return v1.Taint{}, fmt.Errorf("taint %q: unknown effect %q", s, effect)
	}
	key, value, _ := strings.Cut(kv, "=")
	if key == "" {
		return v1.Taint{}, fmt.Errorf("taint %q: empty key", s)
	}
	return v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}, nil
}

// defaultNodeIP is the source address the host would use to reach the
// outside: the default route's interface address.
func defaultNodeIP() string {
	conn, err := net.Dial("udp", "192.0.2.1:9") // TEST-NET-1: nothing is sent over UDP dial
	if err == nil {
		defer conn.Close()
		if a, ok := conn.LocalAddr().(*net.UDPAddr); ok {
			return a.IP.String()
		}
	}
	return "127.0.0.1"
}

func (o *Options) Run(ctx context.Context) error {
	level := slog.LevelInfo
	if o.Verbosity >= 4 {
		level = slog.LevelDebug
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	if o.NodeIP == "" {
		o.NodeIP = defaultNodeIP()
	}
	if err := os.MkdirAll(o.RootDir, 0o750); err != nil {
		return fmt.Errorf("create root dir: %w", err)
	}
	restCfg, err := component.RESTConfig(o.Kubeconfig, "kube-lite-kubelet/"+o.NodeName)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	rt, err := cri.Dial(o.RuntimeEndpoint)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := waitForRuntime(ctx, rt, o.RuntimeWait); err != nil {
		return err
	}
	if o.ImageDir != "" {
		begin := time.Now()
		names, err := images.Importer{Address: o.RuntimeEndpoint, Snapshotter: o.Snapshotter}.ImportDir(ctx, o.ImageDir)
		if err != nil {
			return fmt.Errorf("import images from %s: %w", o.ImageDir, err)
		}
		slog.Info("imported images", "dir", o.ImageDir, "images", names, "took", time.Since(begin).Round(time.Millisecond))
	}
	metrics := kubelet.NewMetrics()
	network := kubelet.NewCNINetwork(o.NodeName, o.CNIBinDir, o.CNIConfDir, filepath.Join(o.RootDir, "cni", "networks"))
	network.Bridge = o.CNIBridge
	network.NonMasqueradeCIDR = o.NonMasqueradeCIDR
	kl, err := kubelet.New(kubelet.Config{
		NodeName:                  o.NodeName,
		NodeIP:                    o.NodeIP,
		PodCIDR:                   o.PodCIDR,
		RootDir:                   o.RootDir,
		Labels:                    o.NodeLabels,
		Taints:                    o.taints,
		MaxPods:                   o.MaxPods,
		Port:                      o.Port,
		CgroupRoot:                o.CgroupRoot,
		ClusterDomain:             o.ClusterDomain,
		ClusterDNS:                o.ClusterDNS,
		ResolvConf:                o.ResolvConf,
		PodInfraImage:             o.PodInfraImage,
		CrashLoopBackoffInitial:   o.CrashLoopInitial,
		CrashLoopBackoffMax:       o.CrashLoopMax,
		ImagePullBackoffInitial:   o.ImagePullInitial,
		SyncPeriod:                o.SyncFrequency,
		NodeStatusUpdateFrequency: o.NodeStatusUpdate,
	}, kubelet.Deps{
		Client:  client,
		Runtime: rt,
		Network: network,
		Volumes: &volume.Manager{Root: o.RootDir, Mounter: volume.SysMounter{}, Source: kubelet.NewAPISource(client, clock.RealClock{})},
		Metrics: metrics,
	})
	if err != nil {
		return err
	}
	certFile, keyFile := o.TLSCertFile, o.TLSKeyFile
	if certFile == "" {
		certFile, keyFile, err = server.EnsureSelfSigned(filepath.Join(o.RootDir, "pki"), o.NodeName, []string{o.NodeIP})
		if err != nil {
			return err
		}
	}
	tlsCfg, err := server.TLSConfig(certFile, keyFile, o.ClientCAFile)
	if err != nil {
		return err
	}
	srv := &server.Server{Provider: kl, Gatherer: metrics.Registry, RequireClientCert: o.ClientCAFile != ""}
	if o.ClientCAFile != "" && o.AuthorizationMode == "Webhook" {
		srv.Authorizer = &server.SARAuthorizer{Client: client, Node: o.NodeName, Clock: clock.RealClock{}, AllowTTL: 5 * time.Minute, DenyTTL: 30 * time.Second}
	}
	errc := make(chan error, 3)
	go func() { errc <- srv.Run(ctx, net.JoinHostPort(o.Address, strconv.Itoa(o.Port)), tlsCfg) }()
	if o.HealthzPort > 0 {
		go func() {
			errc <- component.Serve(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(o.HealthzPort)), kl.Healthy, metrics.Registry)
		}()
	}
	go func() { errc <- kl.Run(ctx) }()
	select {
	case err := <-errc:
		if err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	case <-ctx.Done():
		return nil
	}
}

func waitForRuntime(ctx context.Context, rt *cri.Remote, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := rt.Version(vctx)
		cancel()
		if err == nil {
			slog.Info("container runtime", "name", v.RuntimeName, "version", v.RuntimeVersion)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("container runtime not reachable: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func main() { component.Main("kube-lite-kubelet", &Options{}) }
