// Package scale holds `scale`, through the scale subresource.
package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

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

	streams genericiooptions.IOStreams
}

// NewCmd returns `scale`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "scale [--current-replicas=count] --replicas=COUNT (-f FILENAME | TYPE NAME)",
		Short: "Set a new size for a deployment, replica set or stateful set",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Replicas, "replicas", -1, "The new desired number of replicas (required)")
	fl.IntVar(&o.CurrentReplicas, "current-replicas", -1, "Only scale if the current size is this")
	fl.StringVar(&o.ResourceVersion, "resource-version", "", "Only scale if the resource version matches")
	o.AddFlags(cmd, "Files identifying the resources to scale", false)
	fl.BoolVar(&o.All, "all", false, "Scale all resources of the given types in the namespace")
	return cmd
}

// Run patches the scale subresource of each selected object.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string) error {
	if o.Replicas < 0 {
		return fmt.Errorf("the --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
	}
	b, _, err := o.Builder(f)
	if err != nil {
		return err
	}
	infos, err := b.
		SelectAllParam(o.All).
		ResourceTypeOrNameArgs(o.All, args...).
		Flatten().
		Do().Infos()
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		return fmt.Errorf("no objects passed to scale")
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	for _, info := range infos {
		if err := o.scaleOne(ctx, dyn, info); err != nil {
			return err
		}
		gk := info.Mapping.GroupVersionKind.GroupKind()
		fmt.Fprintf(o.streams.Out, "%s/%s scaled\n", strings.ToLower(gk.String()), info.Name)
	}
	return nil
}

func (o *Options) scaleOne(ctx context.Context, dyn dynamic.Interface, info *resource.Info) error {
	var ri dynamic.ResourceInterface = dyn.Resource(info.Mapping.Resource)
	if info.Mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(info.Mapping.Resource).Namespace(info.Namespace)
	}
	if o.CurrentReplicas >= 0 || o.ResourceVersion != "" {
		cur, err := ri.Get(ctx, info.Name, metav1.GetOptions{}, "scale")
		if err != nil {
			return err
		}
		if o.ResourceVersion != "" && cur.GetResourceVersion() != o.ResourceVersion {
			return fmt.Errorf("expected resource version %s, found %s", o.ResourceVersion, cur.GetResourceVersion())
		}
		replicas, _, _ := unstructuredInt(cur.Object, "spec", "replicas")
		if o.CurrentReplicas >= 0 && replicas != int64(o.CurrentReplicas) {
			return fmt.Errorf("expected replicas to be %d, was %d", o.CurrentReplicas, replicas)
		}
	}
	patch, err := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"replicas": o.Replicas}})
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, info.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	return err
}

func unstructuredInt(obj map[string]interface{}, path ...string) (int64, bool, error) {
	var cur interface{} = obj
	for _, p := range path {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return 0, false, nil
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case int64:
		return v, true, nil
	case float64:
		return int64(v), true, nil
	}
	return 0, false, nil
}
