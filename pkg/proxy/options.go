// Package proxy is kube-lite-proxy: it watches Services and EndpointSlices
// and programs this node's kernel (nftables, through knftables) so that
// cluster IPs and NodePorts reach their endpoints.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"k8s.io/utils/clock"
	"sigs.k8s.io/knftables"

	"github.com/kube-lite/kube-lite/pkg/component"
)

// Options are kube-lite-proxy's flags, named as upstream kube-proxy's.
type Options struct {
	Kubeconfig         string
	HostnameOverride   string
	ClusterCIDR        string
	ServiceCIDR        string
	HealthzBindAddress string
	MetricsBindAddress string
	NodePortAddresses  []string
	SyncPeriod         time.Duration
	MinSyncPeriod      time.Duration
	Cleanup            bool
	// Table is the nftables table (family ip) the proxy owns; a second
	// cluster on the same host needs its own.
	Table string

	nodeName      string
	clusterCIDR   netip.Prefix
	serviceCIDR   netip.Prefix
	nodePortCIDRs []netip.Prefix
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		ServiceCIDR:        "10.96.0.0/16",
		HealthzBindAddress: "0.0.0.0:10256",
		MetricsBindAddress: "127.0.0.1:10249",
		SyncPeriod:         30 * time.Second,
		MinSyncPeriod:      time.Second,
		Table:              TableName,
	}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster).")
	fs.StringVar(&o.HostnameOverride, "hostname-override", o.HostnameOverride, "This node's name, as its kubelet registered it (default: the host name); picks the local endpoints of traffic policy Local.")
	fs.StringVar(&o.ClusterCIDR, "cluster-cidr", o.ClusterCIDR, "The pods' address range; traffic to a Service from outside it is masqueraded. Empty: none is.")
	fs.StringVar(&o.ServiceCIDR, "service-cluster-ip-range", o.ServiceCIDR, "The Services' address range, the apiserver's; the node routes it as unreachable so that an address without rules never leaves the host.")
	fs.StringVar(&o.HealthzBindAddress, "healthz-bind-address", o.HealthzBindAddress, "host:port serving /healthz (upstream's JSON; 503 before the first sync and while a change waits longer than twice --sync-period).")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "host:port serving /metrics.")
	fs.StringSliceVar(&o.NodePortAddresses, "nodeport-addresses", o.NodePortAddresses, "CIDRs of the node addresses that serve NodePorts (default: every address but localhost, as upstream's nftables mode).")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "How soon a failed sync is tried again; unprompted, the table is rewritten only hourly (upstream nftables mode's meaning and default).")
	fs.DurationVar(&o.MinSyncPeriod, "min-sync-period", o.MinSyncPeriod, "Changes arriving within this period after a sync that wrote changes are written together by the next one.")
	fs.BoolVar(&o.Cleanup, "cleanup", o.Cleanup, "Remove the nftables table and the service range's routes, then exit.")
	fs.StringVar(&o.Table, "nftables-table", o.Table, "The nftables table (family ip) this proxy owns: a second cluster on the same host needs another (kube-lite's own flag).")
}

// Validate checks the flags.
func (o *Options) Validate() error {
	var errs []error
	prefix := func(flag, v string) netip.Prefix {
		p, err := netip.ParsePrefix(v)
		if err != nil || !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("--%s %q: want an IPv4 CIDR such as 10.96.0.0/16", flag, v))
			return netip.Prefix{}
		}
		return p.Masked()
	}
	o.serviceCIDR = prefix("service-cluster-ip-range", o.ServiceCIDR)
	if o.ClusterCIDR != "" {
		o.clusterCIDR = prefix("cluster-cidr", o.ClusterCIDR)
	}
	o.nodePortCIDRs = nil
	for _, c := range o.NodePortAddresses {
		if p := prefix("nodeport-addresses", c); p.IsValid() {
			o.nodePortCIDRs = append(o.nodePortCIDRs, p)
		}
	}
	if o.Table == "" {
		errs = append(errs, errors.New("--nftables-table must not be empty"))
	}
	if o.Cleanup {
		return errors.Join(errs...)
	}
	for flag, addr := range map[string]string{"healthz-bind-address": o.HealthzBindAddress, "metrics-bind-address": o.MetricsBindAddress} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("--%s %q: %w", flag, addr, err))
		}
	}
	if o.SyncPeriod <= 0 || o.MinSyncPeriod < 0 {
		errs = append(errs, errors.New("--sync-period must be positive and --min-sync-period not negative"))
	}
	o.nodeName = strings.ToLower(o.HostnameOverride)
	if o.nodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			errs = append(errs, fmt.Errorf("no --hostname-override and no host name: %w", err))
		}
		o.nodeName = strings.ToLower(host)
	}
	return errors.Join(errs...)
}

// Run programs the node until ctx ends, or with --cleanup removes what it
// programs.
func (o *Options) Run(ctx context.Context) error {
	if o.Cleanup {
		return Cleanup(ctx, o.Table, o.serviceCIDR)
	}
	nft, err := knftables.New(knftables.IPv4Family, o.Table)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if err := SetupNode(ctx, o.serviceCIDR); err != nil {
		return err
	}
	cfg, err := component.RESTConfig(o.Kubeconfig, "kube-lite-proxy")
	if err != nil {
		return err
	}
	services, slices, err := Sources(cfg)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p, err := NewProxier(ProxierConfig{
		Services: services, Slices: slices, NFT: nft, Table: o.Table, NodeIPs: hostAddresses, Clock: clock.RealClock{}, Registry: reg,
		Rules:         Config{NodeName: o.nodeName, ClusterCIDR: o.clusterCIDR, ServiceCIDR: o.serviceCIDR, NodePortCIDRs: o.nodePortCIDRs},
		MinSyncPeriod: o.MinSyncPeriod, SyncPeriod: o.SyncPeriod,
	})
	if err != nil {
		return err
	}
	slog.Info("kube-lite-proxy starting", "node", o.nodeName, "serviceCIDR", o.serviceCIDR, "clusterCIDR", o.clusterCIDR)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	healthz := http.NewServeMux()
	healthz.Handle("/healthz", p.health)
	healthz.Handle("/livez", p.health)
	errs := make(chan error, 3)
	go func() { errs <- serveHTTP(ctx, o.HealthzBindAddress, healthz) }()
	go func() { errs <- component.Serve(ctx, o.MetricsBindAddress, nil, reg) }()
	go func() { errs <- p.Run(ctx) }()
	first := <-errs
	cancel()
	return errors.Join(first, <-errs, <-errs)
}

func serveHTTP(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("healthz server: %w", err)
	}
	return nil
}

// hostAddresses lists the host's IPv4 addresses.
func hostAddresses() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// Cleanup removes the table and the service range's routes; what is
// already gone is not an error.
func Cleanup(ctx context.Context, table string, serviceCIDR netip.Prefix) error {
	var errs []error
	nft, err := knftables.New(knftables.IPv4Family, table)
	if err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		tx := nft.NewTransaction()
		// add then delete: "delete" alone fails when the table is absent.
		tx.Add(&knftables.Table{})
		tx.Delete(&knftables.Table{})
		if err := nft.Run(ctx, tx); err != nil {
			errs = append(errs, fmt.Errorf("delete table %s: %w", table, err))
		}
	}
	if err := runIP(ctx, serviceRouteCleanup(serviceCIDR), func([]string) bool { return true }); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		slog.Info("removed nftables table and service routes", "table", table, "serviceCIDR", serviceCIDR)
	}
	return errors.Join(errs...)
}
