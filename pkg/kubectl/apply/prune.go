package apply

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/prune"
)

// PruneOptions are kubectl's allowlist pruning: after a clean apply,
// objects of the allowed kinds that apply (or create --save-config) made,
// that match the selector and that the files no longer hold are deleted.
type PruneOptions struct {
	Prune     bool
	All       bool
	Allowlist []string
	// resources is Allowlist parsed; empty means kubectl's default kinds.
	resources []prune.Resource
}

// visited is what an apply touched: the namespaces its objects are in and
// the objects themselves, which pruning keeps.
type visited struct {
	namespaces sets.Set[string]
	uids       sets.Set[types.UID]
}

// completePrune parses the allowlist and refuses what kubectl refuses next to
// --prune.
func (o *Options) completePrune(f cmdutil.Factory, selector string) error {
	if o.PruneOptions.Prune {
		mapper, err := f.ToRESTMapper()
		if err != nil {
			return err
		}
		if o.PruneOptions.resources, err = prune.ParseResources(mapper, o.PruneOptions.Allowlist); err != nil {
			return err
		}
	}
	if o.PruneOptions.All && selector != "" {
		return fmt.Errorf("cannot set --all and --selector at the same time")
	}
	if !o.PruneOptions.Prune {
		return nil
	}
	if o.deleteOpts != nil && o.deleteOpts.ForceDeletion {
		return fmt.Errorf("--force cannot be used with --prune")
	}
	if !o.PruneOptions.All && selector == "" {
		return fmt.Errorf("all resources selected for prune without explicitly passing --all. To prune all resources, pass the --all flag. If you did not mean to prune all resources, specify a label selector")
	}
	return nil
}

// prune deletes, in every namespace the apply visited (and for
// cluster-scoped kinds once), the objects apply manages that match the
// selector and were not applied now, printing each as "pruned".
func (o *Options) prune(ctx context.Context, f cmdutil.Factory, v visited) error {
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return err
	}
	client, err := f.DynamicClient()
	if err != nil {
		return err
	}
	namespaced, clusterScoped, err := prune.GetRESTMappings(mapper, o.PruneOptions.resources, true)
	if err != nil {
		return fmt.Errorf("error retrieving RESTMappings to prune: %w", err)
	}
	p, err := o.printer("pruned")
	if err != nil {
		return err
	}
	for _, ns := range sets.List(v.namespaces) {
		for _, m := range namespaced {
			if err := o.pruneMapping(ctx, client, p, ns, m, v.uids); err != nil {
				return fmt.Errorf("error pruning namespaced object %v: %w", m.GroupVersionKind, err)
			}
		}
	}
	for _, m := range clusterScoped {
		if err := o.pruneMapping(ctx, client, p, metav1.NamespaceNone, m, v.uids); err != nil {
			return fmt.Errorf("error pruning nonNamespaced object %v: %w", m.GroupVersionKind, err)
		}
	}
	return nil
}

func (o *Options) pruneMapping(ctx context.Context, client dynamic.Interface, p printers.ResourcePrinter, ns string, m *meta.RESTMapping, keep sets.Set[types.UID]) error {
	rc := client.Resource(m.Resource).Namespace(ns)
	list, err := rc.List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
	if err != nil {
		return err
	}
	for i := range list.Items {
		item := &list.Items[i]
		if _, ok := item.GetAnnotations()[corev1.LastAppliedConfigAnnotation]; !ok || keep.Has(item.GetUID()) {
			// Only what apply made is pruned, and never what it just applied.
			continue
		}
		if o.DryRun != cmdutil.DryRunClient {
			opts := o.deleteOptions()
			if o.DryRun == cmdutil.DryRunServer {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			if err := rc.Delete(ctx, item.GetName(), opts); err != nil {
				return err
			}
		}
		if err := p.PrintObj(item, o.streams.Out); err != nil {
			return err
		}
	}
	return nil
}
