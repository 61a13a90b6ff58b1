package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/pkg/component"
	"github.com/kube-lite/kube-lite/pkg/component/leaderelect"
)

// ProtobufContentType is the wire format the scheduler asks for.
const ProtobufContentType = "application/vnd.kubernetes.protobuf"

// Options are kube-lite-scheduler's flags.
type Options struct {
	Kubeconfig               string
	BindAddress              string
	SchedulerName            string
	KubeAPIQPS               float32
	KubeAPIBurst             int
	Parallelism              int
	PercentageOfNodesToScore int32
	LeaderElection           leaderelect.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{BindAddress: "127.0.0.1:10259", SchedulerName: DefaultSchedulerName,
		KubeAPIQPS: 2000, KubeAPIBurst: 4000, Parallelism: 16}
}

// AddFlags registers the flags, with upstream's names.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster).")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port serving /livez, /readyz and /metrics (plain HTTP).")
	fs.StringVar(&o.SchedulerName, "scheduler-name", o.SchedulerName, "Schedule pods whose spec.schedulerName is this name.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Client-side rate limit towards the apiserver (each bound pod costs a binding and an event).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of the client-side rate limit.")
	fs.IntVar(&o.Parallelism, "parallelism", o.Parallelism, "Workers filtering and scoring nodes.")
	fs.Int32Var(&o.PercentageOfNodesToScore, "percentage-of-nodes-to-score", o.PercentageOfNodesToScore, "Stop filtering once this percentage of nodes fits (0: adaptive, as upstream).")
	o.LeaderElection.AddFlags(fs, "kube-scheduler")
}

// Validate checks the flags.
func (o *Options) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--bind-address %q: %w", o.BindAddress, err))
	}
	if o.SchedulerName == "" {
		errs = append(errs, errors.New("--scheduler-name must not be empty"))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if o.Parallelism <= 0 {
		errs = append(errs, errors.New("--parallelism must be positive"))
	}
	if o.PercentageOfNodesToScore < 0 || o.PercentageOfNodesToScore > 100 {
		errs = append(errs, errors.New("--percentage-of-nodes-to-score must be in [0, 100]"))
	}
	if err := o.LeaderElection.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run serves health and metrics, and schedules while this replica leads,
// until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := component.RESTConfig(o.Kubeconfig, "kube-lite-scheduler")
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	// Protobuf costs the apiserver and the scheduler far less than JSON.
	cfg.ContentType = ProtobufContentType
	cfg.AcceptContentTypes = ProtobufContentType + ",application/json"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sched, err := New(Config{Client: client, SchedulerName: o.SchedulerName, Registerer: reg,
		Parallelism: o.Parallelism, PercentageOfNodesToScore: o.PercentageOfNodesToScore})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	go func() { serveErr <- component.Serve(ctx, o.BindAddress, sched.Ready, reg) }()

	var runErr error
	leErr := o.LeaderElection.Run(ctx, client, func(ctx context.Context) {
		runErr = sched.Run(ctx)
	})
	cancel()
	return errors.Join(leErr, runErr, <-serveErr)
}
