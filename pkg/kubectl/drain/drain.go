// Package drain holds `cordon`, `uncordon` and `drain`. They talk to the
// server through a REST client of their own rather than kubectl's drain
// helper, which needs the typed Clientset and would grow kubectl-lite by a
// fifth; what a user sees follows kubectl.
package drain

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// evictRetryDelay is how long kubectl waits before asking again for an
// eviction a disruption budget refused.
const evictRetryDelay = 5 * time.Second

// Options are the flags of the three commands; cordon and uncordon use
// only Selector and the dry-run strategy.
type Options struct {
	Selector, PodSelector                       string
	Force, IgnoreDaemonSets, DeleteEmptyDirData bool
	DisableEviction                             bool
	GracePeriodSeconds                          int
	SkipWaitForDeleteTimeoutSeconds             int
	Timeout                                     time.Duration
	ChunkSize                                   int64

	streams    genericiooptions.IOStreams
	dry        cmdutil.DryRunStrategy
	printFlags *genericclioptions.PrintFlags
	nodes      []*resource.Info
	core       rest.Interface
	dyn        dynamic.Interface
	discovery  discovery.DiscoveryInterface
	retryDelay time.Duration
	// mu serialises the output of the concurrent evictions.
	mu sync.Mutex
}

func newOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		streams:            streams,
		GracePeriodSeconds: -1,
		ChunkSize:          cmdutil.DefaultChunkSize,
		retryDelay:         evictRetryDelay,
		printFlags:         genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme),
	}
}

// NewCordonCmd returns `cordon`.
func NewCordonCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return cordonCmd(f, streams, true)
}

// NewUncordonCmd returns `uncordon`.
func NewUncordonCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return cordonCmd(f, streams, false)
}

func cordonCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, desired bool) *cobra.Command {
	o := newOptions(streams)
	use, short := "cordon NODE", "Mark node as unschedulable"
	if !desired {
		use, short = "uncordon NODE", "Mark node as schedulable"
	}
	cmd := &cobra.Command{
		Use:                   use,
		DisableFlagsInUseLine: true,
		Short:                 short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(f, cmd, args); err != nil {
				return err
			}
			o.cordonOrUncordon(cmd.Context(), desired)
			return nil
		},
	}
	cmdutil.AddLabelSelectorFlagVar(cmd, &o.Selector)
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// NewDrainCmd returns `drain`.
func NewDrainCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := newOptions(streams)
	cmd := &cobra.Command{
		Use:                   "drain NODE",
		DisableFlagsInUseLine: true,
		Short:                 "Drain node in preparation for maintenance",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(f, cmd, args); err != nil {
				return err
			}
			return o.drain(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.Force, "force", false, "Continue even if there are pods that do not declare a controller.")
	fl.BoolVar(&o.IgnoreDaemonSets, "ignore-daemonsets", false, "Ignore DaemonSet-managed pods.")
	fl.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", false, "Continue even if there are pods using emptyDir (local data that will be deleted when the node is drained).")
	fl.IntVar(&o.GracePeriodSeconds, "grace-period", -1, "Period of time in seconds given to each pod to terminate gracefully. If negative, the default value specified in the pod will be used.")
	fl.DurationVar(&o.Timeout, "timeout", 0, "The length of time to wait before giving up, zero means infinite")
	fl.StringVar(&o.PodSelector, "pod-selector", "", "Label selector to filter pods on the node")
	fl.BoolVar(&o.DisableEviction, "disable-eviction", false, "Force drain to use delete, even if eviction is supported. This will bypass checking PodDisruptionBudgets, use with caution.")
	fl.IntVar(&o.SkipWaitForDeleteTimeoutSeconds, "skip-wait-for-delete-timeout", 0, "If pod DeletionTimestamp older than N seconds, skip waiting for the pod.  Seconds must be greater than 0 to skip.")
	cmdutil.AddChunkSizeFlag(cmd, &o.ChunkSize)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddLabelSelectorFlagVar(cmd, &o.Selector)
	return cmd
}

// complete resolves the nodes and the clients.
func (o *Options) complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) == 0 && !cmd.Flags().Changed("selector") {
		return cmdutil.UsageErrorf(cmd, "USAGE: %s [flags]", cmd.Use)
	}
	if len(args) > 0 && o.Selector != "" {
		return cmdutil.UsageErrorf(cmd, "error: cannot specify both a node name and a --selector option")
	}
	var err error
	if o.dry, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.PodSelector != "" {
		if _, err := labels.Parse(o.PodSelector); err != nil {
			return errors.New("--pod-selector=<pod_selector> must be a valid label selector")
		}
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return err
	}
	if o.core, err = coreClient(cfg); err != nil {
		return err
	}
	if o.dyn, err = f.DynamicClient(); err != nil {
		return err
	}
	if o.discovery, err = f.ToDiscoveryClient(); err != nil {
		return err
	}
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	b := f.NewBuilder().
		WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...).
		NamespaceParam(ns).DefaultNamespace().
		RequestChunksOf(o.ChunkSize).
		ResourceNames("nodes", args...).
		SingleResourceType().
		Flatten()
	if o.Selector != "" {
		b = b.LabelSelectorParam(o.Selector).ResourceTypes("nodes")
	}
	r := b.Do()
	if err := r.Err(); err != nil {
		return err
	}
	o.nodes = nil
	return r.Visit(func(info *resource.Info, err error) error {
		if err != nil {
			return err
		}
		if info.Mapping.Resource.GroupResource() != (schema.GroupResource{Resource: "nodes"}) {
			return fmt.Errorf("error: expected resource of type node, got %q", info.Mapping.Resource)
		}
		o.nodes = append(o.nodes, info)
		return nil
	})
}

// coreClient is a REST client for the core group that decodes into the
// typed objects, and encodes the policy/v1 Eviction the pods/eviction
// subresource takes.
func coreClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// printObj prints "kind/name <operation>", with kubectl's dry-run suffix.
func (o *Options) printObj(obj runtime.Object, operation string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.printFlags.NamePrintFlags.Operation = operation
	cmdutil.PrintFlagsWithDryRunStrategy(o.printFlags, o.dry)
	p, err := o.printFlags.ToPrinter()
	if err != nil {
		fmt.Fprintf(o.streams.ErrOut, "error building printer: %v\n", err)
		return
	}
	_ = p.PrintObj(obj, o.streams.Out)
}

// outf and errf write one line; evictions run concurrently.
func (o *Options) outf(format string, a ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.streams.Out, format, a...)
}

func (o *Options) errf(format string, a ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.streams.ErrOut, format, a...)
}
