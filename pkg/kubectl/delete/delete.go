// Package delete holds `delete`, including waiting until the objects are gone.
package delete

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kube-lite/kube-lite/pkg/kubectl/dryrun"
	"github.com/kube-lite/kube-lite/pkg/kubectl/objwait"
	"github.com/kube-lite/kube-lite/pkg/kubectl/selection"
)

// Options are delete's flags.
type Options struct {
	// Flags pick the objects to act on.
	selection.Flags
	FieldSelector  string
	All            bool
	AllNamespaces  bool
	IgnoreNotFound bool
	GracePeriod    int
	Force          bool
	Wait           bool
	Timeout        time.Duration
	Cascade        string
	Output         string
	Now            bool
	// DryRun is --dry-run, set from the flag when the command runs.
	DryRun cmdutil.DryRunStrategy

	streams genericiooptions.IOStreams
}

// NewCmd returns `delete`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "delete ([-f FILENAME] | TYPE [(NAME | -l label | --all)])",
		Short: "Delete resources by file names, types and names, or label selectors",
		RunE: func(cmd *cobra.Command, args []string) error {
			dry, err := cmdutil.GetDryRunStrategy(cmd)
			if err != nil {
				return err
			}
			o.DryRun = dry
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	o.AddFlags(cmd, "Files identifying the resources to delete", true)
	fl.StringVar(&o.FieldSelector, "field-selector", "", "Field selector")
	fl.BoolVar(&o.All, "all", false, "Delete all resources of the given types in the namespace")
	fl.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Delete across all namespaces")
	fl.BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "Treat \"resource not found\" as a successful delete")
	fl.IntVar(&o.GracePeriod, "grace-period", -1, "Seconds given to the resource to terminate gracefully; -1 uses the resource's default, 0 with --force deletes immediately")
	fl.BoolVar(&o.Force, "force", false, "Delete immediately, without waiting for confirmation that the resource has been terminated")
	fl.BoolVar(&o.Wait, "wait", true, "Wait for the resources to be gone before returning")
	fl.DurationVar(&o.Timeout, "timeout", 0, "How long to wait for the deletion (0: a week)")
	fl.StringVar(&o.Cascade, "cascade", "background", `"background", "foreground" or "orphan": what happens to dependents`)
	fl.StringVarP(&o.Output, "output", "o", "", "name: print resource/name only")
	fl.BoolVar(&o.Now, "now", false, "Signal the resources to stop at once (--grace-period=1)")
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

func propagation(cascade string) (metav1.DeletionPropagation, error) {
	switch strings.ToLower(cascade) {
	case "background", "true":
		return metav1.DeletePropagationBackground, nil
	case "foreground":
		return metav1.DeletePropagationForeground, nil
	case "orphan", "false":
		return metav1.DeletePropagationOrphan, nil
	}
	return "", fmt.Errorf(`invalid cascade value (%v). Must be "background", "foreground", or "orphan"`, cascade)
}

// Run deletes what args, -f, -l or --all select.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string) error {
	policy, err := propagation(o.Cascade)
	if err != nil {
		return err
	}
	dry := o.DryRun
	dryRunSuffix := dryrun.Suffix(dry)
	if o.Now {
		if o.GracePeriod != -1 {
			return fmt.Errorf("--now and --grace-period cannot be specified together")
		}
		o.GracePeriod = 1
	}
	if o.Force && o.GracePeriod < 0 {
		o.GracePeriod = 0
	}
	if o.GracePeriod == 0 && !o.Force {
		// As kubectl: grace 0 without --force means "as fast as allowed".
		o.GracePeriod = 1
	}
	if o.Force && o.GracePeriod > 0 {
		return fmt.Errorf("--force and --grace-period greater than 0 cannot be specified together")
	}
	if o.Force && o.GracePeriod == 0 {
		fmt.Fprintln(o.streams.ErrOut, "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.")
	}
	if len(args) == 0 && o.NoFiles() {
		return fmt.Errorf("you must provide one or more resources by argument or filename")
	}
	b, _, err := o.Builder(f)
	if err != nil {
		return err
	}
	_, explicitNS, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	warnClusterScope := explicitNS && !o.AllNamespaces
	r := b.AllNamespaces(o.AllNamespaces).
		FieldSelectorParam(o.FieldSelector).
		SelectAllParam(o.All).
		ResourceTypeOrNameArgs(false, args...).
		RequireObject(false).
		Flatten().
		Do()
	if err := r.Err(); err != nil {
		return err
	}
	if o.IgnoreNotFound {
		// Dropped from the errors as a whole, as kubectl does: what
		// remains keeps its shape, and is printed as kubectl prints it.
		r.IgnoreErrors(apierrors.IsNotFound)
	}
	opts := &metav1.DeleteOptions{PropagationPolicy: &policy}
	if dry == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if o.GracePeriod >= 0 {
		g := int64(o.GracePeriod)
		opts.GracePeriodSeconds = &g
	}
	var deleted []*resource.Info
	uids := map[string]types.UID{}
	found := 0
	err = r.Visit(func(info *resource.Info, err error) error {
		if err != nil {
			return err
		}
		found++
		if warnClusterScope && info.Mapping.Scope.Name() == meta.RESTScopeNameRoot {
			// -n names a namespace, but this object lives in none.
			fmt.Fprintln(o.streams.ErrOut, "Warning: deleting cluster-scoped resources, not scoped to the provided namespace")
			warnClusterScope = false
		}
		if dry == cmdutil.DryRunClient {
			o.print(info, dryRunSuffix)
			return nil
		}
		resp, err := resource.NewHelper(info.Client, info.Mapping).DeleteWithOptions(info.Namespace, info.Name, opts)
		if err != nil {
			return cmdutil.AddSourceToErr("deleting", info.Source, err)
		}
		if resp != nil {
			if uid := objwait.UIDOf(resp); uid != "" {
				uids[info.Namespace+"/"+info.Name] = uid
			}
		}
		if dry == cmdutil.DryRunNone {
			deleted = append(deleted, info)
		}
		o.print(info, dryRunSuffix)
		return nil
	})
	if err != nil {
		return err
	}
	if found == 0 {
		// kubectl says this on stdout.
		fmt.Fprintf(o.streams.Out, "No resources found\n")
		return nil
	}
	if !o.Wait || (o.Force && o.GracePeriod == 0) {
		return nil
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 7 * 24 * time.Hour
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	for _, info := range deleted {
		if err := objwait.Gone(wctx, dyn, info.Mapping, info.Namespace, info.Name, uids[info.Namespace+"/"+info.Name]); err != nil {
			if wctx.Err() != nil {
				// kubectl's words for a --timeout that ran out.
				return fmt.Errorf("timed out waiting for the condition on %s/%s", info.Mapping.Resource.Resource, info.Name)
			}
			return fmt.Errorf("waiting for %s/%s to be deleted: %w", info.Mapping.Resource.Resource, info.Name, err)
		}
	}
	return nil
}

func (o *Options) print(info *resource.Info, suffix string) {
	gk := info.Mapping.GroupVersionKind.GroupKind()
	kind := strings.ToLower(gk.Kind)
	if gk.Group != "" {
		kind += "." + gk.Group
	}
	if o.Output == "name" {
		fmt.Fprintf(o.streams.Out, "%s/%s\n", kind, info.Name)
		return
	}
	op := "deleted"
	if o.Force && o.GracePeriod == 0 {
		op = "force deleted"
	}
	if info.Namespaced() {
		op += " from " + info.Namespace + " namespace"
	}
	fmt.Fprintf(o.streams.Out, "%s %q %s%s\n", kind, info.Name, op, suffix)
}
