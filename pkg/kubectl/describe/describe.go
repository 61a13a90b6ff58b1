// Package describe holds `describe`: kubectl's describers for pods, nodes,
// deployments, replicasets, namespaces (and a generic one for the rest),
// with the object's Events at the end.
package describe

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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

	streams genericiooptions.IOStreams
}

// NewCmd returns `describe`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "describe (-f FILENAME | TYPE [NAME_PREFIX | -l label] | TYPE/NAME)",
		Short: "Show details of a resource or group of resources",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	o.AddFlags(cmd, "Files identifying the resources to describe", true)
	fl.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Describe across all namespaces")
	fl.BoolVar(&o.ShowEvents, "show-events", true, "Show the events related to the object")
	return cmd
}

// Run describes each selected object; a single name that is not found is
// also tried as a prefix, as kubectl does.
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
	infos, err := r.Infos()
	if err != nil {
		if len(args) == 2 && len(infos) == 0 {
			prefixed, perr := o.byPrefix(f, ns, args[0], args[1])
			if perr == nil && len(prefixed) > 0 {
				infos, err = prefixed, nil
			}
		}
		if err != nil {
			return err
		}
	}
	settings := kdescribe.DescriberSettings{ShowEvents: o.ShowEvents, ChunkSize: 500}
	first := true
	for _, info := range infos {
		d, err := kdescribe.Describer(f, info.Mapping)
		if err != nil {
			return err
		}
		s, err := d.Describe(info.Namespace, info.Name, settings)
		if err != nil {
			return err
		}
		if !first {
			fmt.Fprintf(o.streams.Out, "\n\n")
		}
		first = false
		fmt.Fprint(o.streams.Out, s)
	}
	return nil
}

func (o *Options) byPrefix(f cmdutil.Factory, ns, typ, prefix string) ([]*resource.Info, error) {
	infos, err := f.NewBuilder().
		Unstructured().
		NamespaceParam(ns).DefaultNamespace().AllNamespaces(o.AllNamespaces).
		ResourceTypeOrNameArgs(true, typ).
		Flatten().
		Do().Infos()
	if err != nil {
		return nil, err
	}
	var out []*resource.Info
	for _, info := range infos {
		if strings.HasPrefix(info.Name, prefix) {
			out = append(out, info)
		}
	}
	return out, nil
}
