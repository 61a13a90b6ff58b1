// Package logs holds `logs`: container logs, proxied by the apiserver
// from the pod's kubelet.
package logs

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/kubectl/pkg/scheme"
)

// Options are logs' flags.
type Options struct {
	Follow     bool
	Container  string
	Previous   bool
	Tail       int64
	Timestamps bool
	SinceTime  string
	Since      time.Duration
	LimitBytes int64

	streams genericiooptions.IOStreams
}

// NewCmd returns `logs`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "logs [-f] [-c CONTAINER] (POD | TYPE/NAME)",
		Short: "Print the logs of a container in a pod",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "Stream the logs")
	fl.StringVarP(&o.Container, "container", "c", "", "Print the logs of this container")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "Print the logs of the previous instance of the container")
	fl.Int64Var(&o.Tail, "tail", -1, "Lines of recent log to display; -1 shows all")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "Prefix each line with its RFC3339 timestamp")
	fl.DurationVar(&o.Since, "since", 0, "Only logs newer than this duration")
	fl.Int64Var(&o.LimitBytes, "limit-bytes", 0, "Maximum bytes of logs to return")
	return cmd
}

// PodLogOptions maps the flags to the API's options.
func (o *Options) PodLogOptions() *corev1.PodLogOptions {
	opts := &corev1.PodLogOptions{
		Container:  o.Container,
		Follow:     o.Follow,
		Previous:   o.Previous,
		Timestamps: o.Timestamps,
	}
	if o.Tail >= 0 {
		opts.TailLines = &o.Tail
	}
	if o.Since > 0 {
		s := int64(o.Since.Round(time.Second).Seconds())
		opts.SinceSeconds = &s
	}
	if o.LimitBytes > 0 {
		opts.LimitBytes = &o.LimitBytes
	}
	return opts
}

// Run prints (or follows) the logs of the pod or of a pod of the workload.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string) error {
	if len(args) == 2 {
		if o.Container != "" {
			return fmt.Errorf("only one of -c or an inline [CONTAINER] arg is allowed")
		}
		o.Container = args[1]
	}
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	obj, err := f.NewBuilder().
		WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...).
		NamespaceParam(ns).DefaultNamespace().
		ResourceNames("pods", args[0]).
		SingleResourceType().
		Do().Object()
	if err != nil {
		return err
	}
	requests, err := polymorphichelpers.LogsForObjectFn(f, obj, o.PodLogOptions(), 20*time.Second, false)
	if err != nil {
		return err
	}
	for _, req := range requests {
		if err := o.copy(ctx, req.Stream); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) copy(ctx context.Context, open func(context.Context) (io.ReadCloser, error)) error {
	rc, err := open(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(o.streams.Out, rc)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}
