// Package wait holds `wait --for=condition=...|delete|jsonpath=...`.
package wait

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kube-lite/kube-lite/pkg/kubectl/objwait"
	"github.com/kube-lite/kube-lite/pkg/kubectl/selection"
)

// Options are wait's flags.
type Options struct {
	// Flags pick the objects to act on.
	selection.Flags
	For     string
	Timeout time.Duration
	All     bool

	streams genericiooptions.IOStreams
}

// NewCmd returns `wait`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "wait ([-f FILENAME] | TYPE[/NAME] [NAME] | -l label | --all) --for=delete|condition=C[=V]",
		Short: "Wait for a condition on one or many resources",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.For, "for", "", "delete, or condition=NAME[=VALUE] (VALUE defaults to True)")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Second, "How long to wait; 0 checks once, negative waits a week")
	o.AddFlags(cmd, "Files identifying the resources", false)
	fl.BoolVar(&o.All, "all", false, "All resources of the given types in the namespace")
	return cmd
}

// Condition is a parsed --for.
type Condition struct {
	Delete bool
	Type   string
	Value  string
}

// ParseFor parses --for=delete or --for=condition=Type[=Value].
func ParseFor(s string) (Condition, error) {
	if strings.ToLower(s) == "delete" {
		return Condition{Delete: true}, nil
	}
	rest, ok := strings.CutPrefix(s, "condition=")
	if !ok || rest == "" {
		return Condition{}, fmt.Errorf("unrecognized condition: %q; use --for=delete or --for=condition=NAME[=VALUE]", s)
	}
	typ, val, hasVal := strings.Cut(rest, "=")
	if !hasVal {
		val = "True"
	}
	return Condition{Type: typ, Value: val}, nil
}

// Met reports whether obj has the condition; nil (deleted) never has it.
func (c Condition) Met(obj *unstructured.Unstructured) bool {
	if c.Delete {
		return obj == nil
	}
	if obj == nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, raw := range conds {
		m, ok := raw.(map[string]interface{})
		if !ok {
			continue
		}
		if t, _ := m["type"].(string); !strings.EqualFold(t, c.Type) {
			continue
		}
		st, _ := m["status"].(string)
		return strings.EqualFold(st, c.Value)
	}
	return false
}

// Run waits for each selected object in turn.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string) error {
	cond, err := ParseFor(o.For)
	if err != nil {
		return err
	}
	b, _, err := o.Builder(f)
	if err != nil {
		return err
	}
	// For --for=delete named objects are not fetched: one already gone
	// meets the condition, and the watch below sees that.
	infos, err := b.
		SelectAllParam(o.All).
		ResourceTypeOrNameArgs(true, args...).
		RequireObject(!cond.Delete).
		Flatten().
		Do().Infos()
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		return fmt.Errorf("no matching resources found")
	}
	timeout := o.Timeout
	if timeout < 0 {
		timeout = 7 * 24 * time.Hour
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	for _, info := range infos {
		gk := info.Mapping.GroupVersionKind.GroupKind()
		ref := strings.ToLower(gk.String()) + "/" + info.Name
		if timeout == 0 {
			u, err := objwait.Current(ctx, dyn, info.Mapping, info.Namespace, info.Name)
			if err != nil {
				return err
			}
			if !cond.Met(u) {
				return fmt.Errorf("condition not met for %s", ref)
			}
		} else if err := objwait.Until(wctx, dyn, info.Mapping, info.Namespace, info.Name, cond.Met); err != nil {
			if wctx.Err() != nil {
				return fmt.Errorf("timed out waiting for the condition on %s/%s", info.Mapping.Resource.Resource, info.Name)
			}
			return err
		}
		fmt.Fprintf(o.streams.Out, "%s condition met\n", ref)
	}
	return nil
}
