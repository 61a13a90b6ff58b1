// Package scale holds `scale`, through the scale subresource.
package scale

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/scheme"
	scaleclient "k8s.io/client-go/scale"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/scale"

	"github.com/kube-lite/kube-lite/pkg/kubectl/selection"
)

// Options are scale's flags.
type Options struct {
	// Flags pick the objects to act on.
	selection.Flags
	Replicas        int
	CurrentReplicas int
	ResourceVersion string
	All             bool
	// Timeout, when set, waits until the status has the new size.
	Timeout    time.Duration
	PrintFlags *genericclioptions.PrintFlags

	streams genericiooptions.IOStreams
}

// NewCmd returns `scale`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams, PrintFlags: genericclioptions.NewPrintFlags("scaled").WithTypeSetter(scheme.Scheme)}
	cmd := &cobra.Command{
		Use: "scale [--resource-version=version] [--current-replicas=count] --replicas=COUNT (-f FILENAME | TYPE NAME)",
		// kube-lite serves the scale subresource of these two kinds.
		Short: "Set a new size for a deployment or replica set",
		RunE: func(cmd *cobra.Command, args []string) error {
			dry, err := cmdutil.GetDryRunStrategy(cmd)
			if err != nil {
				return err
			}
			return o.Run(f, args, dry)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Replicas, "replicas", 0, "The new desired number of replicas (required)")
	_ = cmd.MarkFlagRequired("replicas")
	fl.IntVar(&o.CurrentReplicas, "current-replicas", -1, "Only scale if the current size is this; -1 (default) for no condition")
	fl.StringVar(&o.ResourceVersion, "resource-version", "", "Only scale if the resource version matches")
	o.AddFlags(cmd, "Files identifying the resources to scale", false)
	fl.BoolVar(&o.All, "all", false, "Scale all resources of the given types in the namespace")
	cmdutil.AddDryRunFlag(cmd)
	fl.DurationVar(&o.Timeout, "timeout", 0, "How long to wait for the new size to be reached; 0 does not wait")
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Run scales each selected object with kubectl's scaler: preconditions
// checked on the scale subresource, conflicts retried, and with --timeout
// a wait for the new size.
func (o *Options) Run(f cmdutil.Factory, args []string, dry cmdutil.DryRunStrategy) error {
	if o.Replicas < 0 {
		return fmt.Errorf("The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0") //nolint:staticcheck // kubectl's wording
	}
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, dry)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	b, _, err := o.Builder(f)
	if err != nil {
		return err
	}
	// Like kubectl, the objects that were found are scaled even when
	// others are missing; the missing ones are reported at the end.
	infos, infoErr := b.
		SelectAllParam(o.All).
		ResourceTypeOrNameArgs(o.All, args...).
		Flatten().
		Do().Infos()
	if o.ResourceVersion != "" && len(infos) > 1 {
		return fmt.Errorf("cannot use --resource-version with multiple resources")
	}
	if len(infos) == 0 {
		if infoErr != nil {
			return infoErr
		}
		return fmt.Errorf("no objects passed to scale")
	}
	scalesGetter, err := cmdutil.ScaleClientFn(f)
	if err != nil {
		return err
	}
	scaler := scale.NewScaler(scalesGetter)
	var precondition *scale.ScalePrecondition
	if o.CurrentReplicas != -1 || o.ResourceVersion != "" {
		precondition = &scale.ScalePrecondition{Size: o.CurrentReplicas, ResourceVersion: o.ResourceVersion}
	}
	retry := scale.NewRetryParams(time.Second, 5*time.Minute)
	for _, info := range infos {
		size := int64(o.Replicas)
		if dry != cmdutil.DryRunClient {
			actual := new(int32)
			if err := scaler.Scale(info.Namespace, info.Name, uint(o.Replicas), actual, precondition, retry, nil,
				info.Mapping.Resource, dry == cmdutil.DryRunServer); err != nil {
				return err
			}
			size = int64(*actual)
			if o.Timeout != 0 && dry == cmdutil.DryRunNone {
				if err := waitForSize(scalesGetter, info.Mapping.Resource.GroupResource(), info.Namespace, info.Name, int32(o.Replicas), o.Timeout); err != nil {
					return err
				}
			}
		}
		// -o shows the object with its new size, as the scale answered.
		if u, ok := info.Object.(*unstructured.Unstructured); ok {
			if err := unstructured.SetNestedField(u.Object, size, "spec", "replicas"); err != nil {
				return err
			}
		}
		if err := printer.PrintObj(info.Object, o.streams.Out); err != nil {
			return err
		}
	}
	return infoErr
}

// waitForSize polls the scale subresource until its status reaches size, or
// someone else changed the wanted size. kubectl's own wait reports the error
// of its last poll when that poll fails at the deadline: client-go's rate
// limiter refuses a request whose context's deadline has passed even when a
// token is free, so --timeout often printed "client rate limiter Wait
// returned an error"; here the deadline is always the timeout it is.
func waitForSize(sc scaleclient.ScalesGetter, gr schema.GroupResource, namespace, name string, size int32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := sc.Scales(namespace).Get(ctx, gr, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Spec.Replicas != size || s.Status.Replicas == size, nil
	})
	// The clock, not ctx.Err(): at the deadline the limiter refuses before
	// the context's timer has fired and marked it done.
	if deadline, _ := ctx.Deadline(); err != nil && !time.Now().Before(deadline) {
		return fmt.Errorf("timed out waiting for %q to be synced", name)
	}
	return err
}
