// Package wait holds `wait --for=condition=...|delete|jsonpath=...`.
package wait

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/jsonpath"
	kget "k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kube-lite/kube-lite/pkg/kubectl/objwait"
	"github.com/kube-lite/kube-lite/pkg/kubectl/selection"
)

// Options are wait's flags.
type Options struct {
	// Flags pick the objects to act on.
	selection.Flags
	For     []string
	Timeout time.Duration
	All     bool

	printFlags *genericclioptions.PrintFlags
	streams    genericiooptions.IOStreams
}

// NewCmd returns `wait`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams, printFlags: genericclioptions.NewPrintFlags("condition met")}
	cmd := &cobra.Command{
		Use:   "wait ([-f FILENAME] | TYPE[/NAME] [NAME] | -l label | --all) --for=create|delete|condition=C[=V]|jsonpath='{PATH}'[=V]",
		Short: "Wait for a condition on one or many resources",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.For, "for", nil, "create, delete, condition=NAME[=VALUE] (VALUE defaults to True) or jsonpath='{PATH}'[=VALUE] (without VALUE: the field exists); repeat to wait for all of them in turn")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Second, "How long to wait; 0 checks once, negative waits a week")
	o.AddFlags(cmd, "Files identifying the resources", false)
	fl.BoolVar(&o.All, "all", false, "All resources of the given types in the namespace")
	o.printFlags.AddFlags(cmd)
	return cmd
}

// Condition is one parsed --for.
type Condition struct {
	Delete bool
	Create bool
	Type   string
	Value  string
	// Path is set for jsonpath=; an empty JSONValue then means "the
	// field exists".
	Path      *jsonpath.JSONPath
	JSONValue string
}

// ParseFor parses --for=create|delete|condition=Type[=Value]|jsonpath={path}[=Value].
func ParseFor(s string) (Condition, error) {
	switch strings.ToLower(s) {
	case "delete":
		return Condition{Delete: true}, nil
	case "create":
		return Condition{Create: true}, nil
	}
	if expr, ok := strings.CutPrefix(s, "jsonpath="); ok {
		return parseJSONPath(expr)
	}
	rest, ok := strings.CutPrefix(s, "condition=")
	if !ok {
		return Condition{}, fmt.Errorf("unrecognized condition: %q", s)
	}
	typ, val, hasVal := strings.Cut(rest, "=")
	if !hasVal {
		val = "True"
	}
	return Condition{Type: typ, Value: val}, nil
}

// parseJSONPath splits "{.a.b}=value" on the first '=' that is not part of
// an '==' (a filter's comparison).
func parseJSONPath(in string) (Condition, error) {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(in); i++ {
		switch {
		case in[i] == '=' && i+1 < len(in) && in[i+1] == '=':
			cur.WriteString("==")
			i++
		case in[i] == '=':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(in[i])
		}
	}
	parts = append(parts, cur.String())
	if len(parts) > 2 {
		return Condition{}, fmt.Errorf("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 or --for=jsonpath='{.status.readyReplicas}'")
	}
	expr, err := kget.RelaxedJSONPathExpression(parts[0])
	if err != nil {
		return Condition{}, err
	}
	if expr == "" {
		return Condition{}, fmt.Errorf("jsonpath expression cannot be empty")
	}
	c := Condition{Path: jsonpath.New("wait").AllowMissingKeys(true)}
	if err := c.Path.Parse(expr); err != nil {
		return Condition{}, err
	}
	if len(parts) == 2 {
		c.JSONValue = strings.Trim(parts[1], `'"`)
		if c.JSONValue == "" {
			return Condition{}, fmt.Errorf("jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3")
		}
	}
	return c, nil
}

// Met reports whether obj has the condition; nil (deleted) never has it.
// The error says the condition can never be met as written.
func (c Condition) Met(obj *unstructured.Unstructured) (bool, error) {
	switch {
	case c.Delete:
		return obj == nil, nil
	case obj == nil:
		return false, nil
	case c.Create:
		return true, nil
	case c.Path != nil:
		return c.jsonPathMet(obj)
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
		return strings.EqualFold(st, c.Value), nil
	}
	return false, nil
}

func (c Condition) jsonPathMet(obj *unstructured.Unstructured) (bool, error) {
	results, err := c.Path.FindResults(obj.Object)
	if err != nil {
		return false, err
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return false, nil
	}
	if len(results) > 1 {
		return false, fmt.Errorf("given jsonpath expression matches more than one list")
	}
	if len(results[0]) > 1 {
		return false, fmt.Errorf("given jsonpath expression matches more than one value")
	}
	if c.JSONValue == "" {
		return true, nil
	}
	v := results[0][0].Interface()
	switch v.(type) {
	case map[string]interface{}, []interface{}:
		return false, fmt.Errorf("jsonpath leads to a nested object or list which is not supported")
	}
	return strings.TrimSpace(fmt.Sprintf("%v", v)) == strings.TrimSpace(c.JSONValue), nil
}

// Run waits for each selected object in turn, for each condition in the
// order given (create first). Objects that fail do not stop the others;
// their errors are reported together.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string) error {
	var conds []Condition
	forDelete, forCreate := false, false
	for _, s := range o.For {
		c, err := ParseFor(s)
		if err != nil {
			return err
		}
		forDelete = forDelete || c.Delete
		forCreate = forCreate || c.Create
		conds = append(conds, c)
	}
	if len(conds) == 0 {
		return fmt.Errorf("unrecognized condition: %q", o.For)
	}
	printer, err := o.printFlags.ToPrinter()
	if err != nil {
		return err
	}
	timeout := o.Timeout
	if timeout < 0 {
		timeout = 7 * 24 * time.Hour
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// As kubectl, a file's objects are looked up on the server: one
	// missing is reported at once instead of waited for (using up the
	// others' --timeout); --for=create waits until all exist.
	find := func() (*resource.Result, error) {
		b, _, err := o.Builder(f)
		if err != nil {
			return nil, err
		}
		return b.SelectAllParam(o.All).
			ResourceTypeOrNameArgs(true, args...).
			Flatten().
			Latest().
			Do(), nil
	}
	if forCreate {
		if err := o.waitCreated(wctx, find); err != nil {
			return err
		}
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	r, err := find()
	if err != nil {
		return err
	}
	if forDelete {
		// An object already gone meets --for=delete silently, as with
		// kubectl: there is nothing to report on.
		r.IgnoreErrors(apierrors.IsNotFound)
	}
	visited := 0
	err = r.Visit(func(info *resource.Info, err error) error {
		if err != nil {
			return err
		}
		visited++
		for _, c := range conds {
			obj, err := o.waitOne(ctx, wctx, dyn, info, c, timeout == 0)
			if err != nil {
				return err
			}
			if err := printer.PrintObj(obj, o.streams.Out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if visited == 0 && !forDelete {
		return fmt.Errorf("no matching resources found")
	}
	return nil
}

// waitCreated polls until every selected object exists.
func (o *Options) waitCreated(ctx context.Context, find func() (*resource.Result, error)) error {
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(context.Context) (bool, error) {
		r, err := find()
		if err != nil {
			return false, err
		}
		found := false
		err = r.Visit(func(*resource.Info, error) error {
			found = true
			return nil
		})
		if err != nil && utilerrors.FilterOut(err, apierrors.IsNotFound) == nil {
			// Only NotFound (one for each of a file's objects looked up
			// on the server): objects still to come.
			return false, nil
		}
		return found, err
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("timed out waiting for the condition")
	}
	return err
}

// waitOne waits for one condition on one object and returns what to
// print: the object as last seen (a reference when it is gone).
func (o *Options) waitOne(ctx, wctx context.Context, dyn dynamic.Interface, info *resource.Info, c Condition, once bool) (runtime.Object, error) {
	var last *unstructured.Unstructured
	var metErr error
	done := func(u *unstructured.Unstructured) bool {
		if u != nil {
			last = u
		}
		met, err := c.Met(u)
		if err != nil {
			metErr = err
			return true
		}
		return met
	}
	if once {
		u, err := objwait.Current(ctx, dyn, info.Mapping, info.Namespace, info.Name)
		if err != nil {
			return nil, err
		}
		if !done(u) {
			// kubectl names it by resource: pods/x.
			return nil, fmt.Errorf("condition not met for %s", info.ObjectName())
		}
	} else if err := objwait.Until(wctx, dyn, info.Mapping, info.Namespace, info.Name, done); err != nil {
		if wctx.Err() != nil {
			return nil, fmt.Errorf("timed out waiting for the condition on %s/%s", info.Mapping.Resource.Resource, info.Name)
		}
		return nil, err
	}
	if metErr != nil {
		return nil, metErr
	}
	if last == nil || c.Delete {
		gvk := info.Mapping.GroupVersionKind
		last = &unstructured.Unstructured{}
		last.SetGroupVersionKind(gvk)
		last.SetNamespace(info.Namespace)
		last.SetName(info.Name)
	}
	return last, nil
}
