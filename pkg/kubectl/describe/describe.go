// Package describe holds `describe`: kubectl's describers for pods, nodes,
// deployments, replicasets, namespaces (and a generic one for the rest),
// with the object's Events at the end.
package describe

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	kdescribe "k8s.io/kubectl/pkg/describe"

	"github.com/kube-lite/kube-lite/pkg/kubectl/selection"
)

// Options are describe's flags.
type Options struct {
	// Flags pick the objects to act on.
	selection.Flags
	AllNamespaces bool
	ShowEvents    bool

	// showEventsSet: --show-events was given, so it holds even for many
	// objects.
	showEventsSet bool

	streams genericiooptions.IOStreams
}

// NewCmd returns `describe`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "describe (-f FILENAME | TYPE [NAME_PREFIX | -l label] | TYPE/NAME)",
		Short: "Show details of a resource or group of resources",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.showEventsSet = cmd.Flags().Changed("show-events")
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	o.AddFlags(cmd, "Files identifying the resources to describe", true)
	fl.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Describe across all namespaces")
	fl.BoolVar(&o.ShowEvents, "show-events", true, "Show the events related to the object; by default only when one object is described")
	return cmd
}

// Run describes each selected object; a single name that is not found is
// also tried as a prefix, as kubectl does. Objects that cannot be
// described do not stop the others.
func (o *Options) Run(_ context.Context, f cmdutil.Factory, args []string) error {
	if len(args) == 0 && o.NoFiles() {
		return fmt.Errorf("you must specify the type of resource to describe. Use \"kubectl-lite api-resources\" for a complete list of supported resources")
	}
	b, ns, err := o.Builder(f)
	if err != nil {
		return err
	}
	r := b.AllNamespaces(o.AllNamespaces).
		ResourceTypeOrNameArgs(true, args...).
		Flatten().
		Do()
	if err := r.Err(); err != nil {
		return err
	}
	settings := kdescribe.DescriberSettings{ShowEvents: o.ShowEvents, ChunkSize: 500}
	infos, err := r.Infos()
	if (err != nil || len(infos) > 1) && !o.showEventsSet {
		// Events of many objects would drown their descriptions.
		settings.ShowEvents = false
	}
	describe := newDescribe(f, settings)
	var errs []error
	if err != nil {
		if apierrors.IsNotFound(err) && len(args) == 2 {
			return o.byPrefix(f, ns, args[0], args[1], describe, err)
		}
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	first := true
	for _, info := range infos {
		s, err := describe(info)
		if err != nil {
			// The same failure for every object of a kind is said once.
			if !seen[err.Error()] {
				seen[err.Error()] = true
				errs = append(errs, err)
			}
			continue
		}
		if !first {
			fmt.Fprint(o.streams.Out, "\n\n")
		}
		first = false
		fmt.Fprint(o.streams.Out, s)
	}
	if len(infos) == 0 && len(errs) == 0 {
		if o.AllNamespaces {
			fmt.Fprintln(o.streams.ErrOut, "No resources found")
		} else {
			fmt.Fprintf(o.streams.ErrOut, "No resources found in %s namespace.\n", ns)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// newDescribe returns a function that describes one object. kubectl's
// Describer builds a client set and every kind's describer each time it is
// asked, so each resource's describer (or its error) is built once and
// reused for all its objects.
func newDescribe(f cmdutil.Factory, settings kdescribe.DescriberSettings) func(*resource.Info) (string, error) {
	type built struct {
		d   kdescribe.ResourceDescriber
		err error
	}
	byResource := map[schema.GroupVersionResource]built{}
	return func(info *resource.Info) (string, error) {
		b, ok := byResource[info.Mapping.Resource]
		if !ok {
			b.d, b.err = kdescribe.Describer(f, info.Mapping)
			byResource[info.Mapping.Resource] = b
		}
		if b.err != nil {
			return "", b.err
		}
		return b.d.Describe(info.Namespace, info.Name, settings)
	}
}

// byPrefix describes the objects of typ whose names start with prefix;
// none gives back notFound.
func (o *Options) byPrefix(f cmdutil.Factory, ns, typ, prefix string, describe func(*resource.Info) (string, error), notFound error) error {
	infos, err := f.NewBuilder().
		Unstructured().
		NamespaceParam(ns).DefaultNamespace().
		ResourceTypeOrNameArgs(true, typ).
		SingleResourceType().
		Flatten().
		Do().Infos()
	if err != nil {
		return err
	}
	found := false
	for _, info := range infos {
		if !strings.HasPrefix(info.Name, prefix) {
			continue
		}
		found = true
		s, err := describe(info)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.streams.Out, "%s\n", s)
	}
	if !found {
		return notFound
	}
	return nil
}
