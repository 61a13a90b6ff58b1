package drain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// unschedulablePatch is the strategic merge patch kubectl sends: cordon
// sets spec.unschedulable, uncordon removes it (false is its zero value
// and omitted, as the scheduler and kubelet expect).
func unschedulablePatch(desired bool) []byte {
	if desired {
		return []byte(`{"spec":{"unschedulable":true}}`)
	}
	return []byte(`{"spec":{"unschedulable":null}}`)
}

// cordonOrUncordon marks each node. Like kubectl, a node it cannot patch
// is reported and the others still done; the command succeeds anyway.
func (o *Options) cordonOrUncordon(ctx context.Context, desired bool) {
	verb, done, already := "cordon", "cordoned", "already cordoned"
	if !desired {
		verb, done, already = "uncordon", "uncordoned", "already uncordoned"
	}
	for _, info := range o.nodes {
		node, err := asNode(info.Object)
		if err != nil {
			o.errf("error: unable to %s node %q: %v\n", verb, info.Name, err)
			continue
		}
		if node.Spec.Unschedulable == desired {
			o.printObj(info.Object, already)
			continue
		}
		if o.dry != cmdutil.DryRunClient {
			opts := metav1.PatchOptions{}
			if o.dry == cmdutil.DryRunServer {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			updated := &corev1.Node{}
			err := o.core.Patch(types.StrategicMergePatchType).Resource("nodes").Name(node.Name).
				VersionedParams(&opts, scheme.ParameterCodec).
				Body(unschedulablePatch(desired)).Do(ctx).Into(updated)
			if err != nil {
				o.errf("error: unable to %s node %q: %v\n", verb, info.Name, err)
				continue
			}
		}
		o.printObj(info.Object, done)
	}
}

func asNode(obj runtime.Object) (*corev1.Node, error) {
	if n, ok := obj.(*corev1.Node); ok {
		return n, nil
	}
	n := &corev1.Node{}
	if err := scheme.Scheme.Convert(obj, n, nil); err != nil {
		return nil, fmt.Errorf("unexpected type %T: %w", obj, err)
	}
	return n, nil
}
