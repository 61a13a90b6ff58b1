package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kube-lite/kube-lite/pkg/apiserver/servicealloc"
)

// Options are the apiserver's command-line settings, named as upstream's.
type Options struct {
	BindAddress string
	SecurePort  int
	TLSCertFile string
	TLSKeyFile  string
	CertDir     string

	// DataDir holds the embedded etcd when EtcdServers is empty.
	DataDir     string
	EtcdServers []string
	EtcdCAFile  string
	EtcdCert    string
	EtcdKey     string
	EtcdPrefix  string
	// EtcdCompactionInterval is how often old revisions are compacted.
	EtcdCompactionInterval time.Duration

	// Kubelet client credentials, for pods/log.
	KubeletClientCertificate string
	KubeletClientKey         string
	KubeletCertificateAuth   string

	// Profiling serves /debug/pprof, as upstream's --profiling.
	Profiling bool
	// GCPercentUnderLoad is the garbage collector's target (GOGC) while
	// the server is busy (gctuner.go); 0 leaves the collector alone.
	GCPercentUnderLoad int
	// AdmissionControlConfigFile is upstream's AdmissionConfiguration
	// file; kube-lite reads its PodSecurity plugin's configuration.
	AdmissionControlConfigFile string
	// Security: authentication and authorization (security.go).
	Security SecurityOptions
	// ServiceClusterIPRange and ServiceNodePortRange are what Services'
	// cluster IPs and node ports are allocated from.
	ServiceClusterIPRange string
	ServiceNodePortRange  string
	// AdvertiseAddress is the address the `kubernetes` Service's endpoints
	// name; empty picks --bind-address or, when that is unspecified, the
	// address of the interface holding the default route.
	AdvertiseAddress string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		BindAddress:            "0.0.0.0",
		SecurePort:             6443,
		CertDir:                "/var/lib/kube-lite/apiserver/certs",
		DataDir:                "/var/lib/kube-lite/etcd",
		EtcdPrefix:             "/registry",
		EtcdCompactionInterval: 5 * time.Minute,
		Security:               NewSecurityOptions(),
		Profiling:              true,
		GCPercentUnderLoad:     400,
		ServiceClusterIPRange:  DefaultServiceClusterIPRange,
		ServiceNodePortRange:   DefaultServiceNodePortRange,
	}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "The IP address on which to listen for the --secure-port port.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "The port on which to serve HTTPS.")
	fs.StringVar(&o.AdmissionControlConfigFile, "admission-control-config-file", o.AdmissionControlConfigFile,
		"An AdmissionConfiguration (apiserver.config.k8s.io/v1) file; its PodSecurity plugin configuration sets the defaults and exemptions of Pod Security admission.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate (PEM). Without it, a self-signed one is generated in --cert-dir.")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "Private key of --tls-cert-file (PEM).")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Where the generated self-signed serving certificate is kept.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Data directory of the embedded etcd, used when --etcd-servers is empty.")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "External etcd servers (scheme://ip:port, comma separated). Empty starts an embedded etcd.")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "CA bundle that verifies the etcd servers.")
	fs.StringVar(&o.EtcdCert, "etcd-certfile", o.EtcdCert, "Client certificate for etcd.")
	fs.StringVar(&o.EtcdKey, "etcd-keyfile", o.EtcdKey, "Client key for etcd.")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "The prefix of every key in etcd.")
	fs.DurationVar(&o.EtcdCompactionInterval, "etcd-compaction-interval", o.EtcdCompactionInterval, "How often old etcd revisions are compacted (0 disables).")
	fs.StringVar(&o.KubeletClientCertificate, "kubelet-client-certificate", o.KubeletClientCertificate, "Client certificate for talking to kubelets.")
	fs.StringVar(&o.KubeletClientKey, "kubelet-client-key", o.KubeletClientKey, "Client key for talking to kubelets.")
	fs.StringVar(&o.KubeletCertificateAuth, "kubelet-certificate-authority", o.KubeletCertificateAuth, "CA bundle that verifies kubelets' serving certificates.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve /debug/pprof to users allowed to read it.")
	fs.IntVar(&o.GCPercentUnderLoad, "gc-percent-under-load", o.GCPercentUnderLoad, "Garbage collection target (as GOGC) while serving more than 500 requests/s: less CPU spent collecting for more memory while busy. 0 disables; a GOGC environment variable overrides it.")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange, "A CIDR notation IP range from which to assign service cluster IPs (IPv4). Its first address is the kubernetes Service's.")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", o.ServiceNodePortRange, "A port range to reserve for services with NodePort visibility, inclusive at both ends.")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "The IP address on which to advertise the apiserver to members of the cluster (the kubernetes Service's endpoints). Empty uses --bind-address or, when that is 0.0.0.0, the IPv4 address of the interface holding the default route.")
	o.Security.AddFlags(fs)
}

// Validate reports the first inconsistent setting.
func (o *Options) Validate() error {
	var errs []error
	if o.SecurePort <= 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a valid port", o.SecurePort))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if len(o.EtcdServers) == 0 && o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required for the embedded etcd (or give --etcd-servers)"))
	}
	if (o.KubeletClientCertificate == "") != (o.KubeletClientKey == "") {
		errs = append(errs, errors.New("--kubelet-client-certificate and --kubelet-client-key go together"))
	}
	if o.EtcdPrefix == "" || o.EtcdPrefix[0] != '/' {
		errs = append(errs, fmt.Errorf("--etcd-prefix %q must start with /", o.EtcdPrefix))
	}
	if o.GCPercentUnderLoad < 0 {
		errs = append(errs, fmt.Errorf("--gc-percent-under-load %d is negative", o.GCPercentUnderLoad))
	}
	if _, err := servicealloc.ParseIPRange(o.ServiceClusterIPRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-cluster-ip-range: %w", err))
	}
	if _, err := servicealloc.ParsePortRange(o.ServiceNodePortRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-node-port-range: %w", err))
	}
	if o.AdvertiseAddress != "" && net.ParseIP(o.AdvertiseAddress) == nil {
		errs = append(errs, fmt.Errorf("--advertise-address %q is not an IP address", o.AdvertiseAddress))
	}
	errs = append(errs, o.Security.Validate())
	return errors.Join(errs...)
}

// Run serves with these options until ctx ends (see the package's Run).
func (o *Options) Run(ctx context.Context) error { return Run(ctx, o, nil) }

// advertiseAddress is --advertise-address, or --bind-address when it is a
// specific address, or, as upstream, the first IPv4 address of the
// interface holding the default route (of any interface when there is
// none); empty when the host has no such address.
func (o *Options) advertiseAddress() string {
	if o.AdvertiseAddress != "" {
		return o.AdvertiseAddress
	}
	if ip := net.ParseIP(o.BindAddress); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	if routes, err := os.ReadFile("/proc/net/route"); err == nil {
		if name := defaultRouteInterface(string(routes)); name != "" {
			if iface, err := net.InterfaceByName(name); err == nil {
				if ip := firstIPv4(iface.Addrs()); ip != "" {
					return ip
				}
			}
		}
	}
	return firstIPv4(net.InterfaceAddrs())
}

// defaultRouteInterface returns the interface of the IPv4 default route
// in a /proc/net/route table.
func defaultRouteInterface(table string) string {
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 7 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return ""
}

func firstIPv4(addrs []net.Addr, err error) string {
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
