// Package rollout holds `rollout status|history|undo|restart|pause|resume`.
package rollout

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/kubectl/pkg/cmd/set"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/kubectl/pkg/scheme"

	"github.com/kube-lite/kube-lite/pkg/kubectl/dryrun"
	"github.com/kube-lite/kube-lite/pkg/kubectl/objwait"
	"github.com/kube-lite/kube-lite/pkg/kubectl/selection"
)

// NewCmd returns `rollout` with its subcommands.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a deployment",
		// kubectl's: help and exit 1, and a misspelt subcommand is a
		// usage error naming this command's help.
		Run: cmdutil.DefaultSubCommandRun(streams.Out),
	}
	cmd.AddCommand(newStatusCmd(f, streams), newHistoryCmd(f, streams), newUndoCmd(f, streams), newRestartCmd(f, streams),
		newPauseCmd(f, streams, true), newPauseCmd(f, streams, false))
	return cmd
}

// addSelectionFlags registers kubectl's -f, -k, -R and -l of the rollout
// subcommands.
func addSelectionFlags(cmd *cobra.Command, s *selection.Flags) {
	cmdutil.AddFilenameOptionFlags(cmd, &s.Filenames, "identifying the resource to get from a server.")
	cmd.Flags().StringVarP(&s.LabelSelector, "selector", "l", "", "Selector (label query) to filter on")
}

// visit calls fn with each object the arguments, -f, -k and -l pick, as
// kubectl does: one that cannot be fetched is reported after the others.
// It returns the namespace they were looked for in.
func visit(f cmdutil.Factory, args []string, s *selection.Flags, typed bool, fn func(*resource.Info) error) (string, error) {
	r, ns, err := targets(f, args, s, typed)
	if err != nil {
		return "", err
	}
	return ns, r.Visit(func(info *resource.Info, err error) error {
		if err != nil {
			return err
		}
		return fn(info)
	})
}

// targets finds the objects the arguments, -f, -k and -l pick, as kubectl's
// rollout commands do: typed (the scheme's Go types) or unstructured. It
// also returns the namespace they were looked for in.
func targets(f cmdutil.Factory, args []string, s *selection.Flags, typed bool) (*resource.Result, string, error) {
	builder := s.Builder
	if typed {
		builder = s.TypedBuilder
	}
	b, ns, err := builder(f)
	if err != nil {
		return nil, "", err
	}
	if len(args) == 0 && s.NoFiles() {
		return nil, "", fmt.Errorf("required resource not specified")
	}
	r := b.ResourceTypeOrNameArgs(true, args...).
		Latest().
		Flatten().
		Do()
	if err := r.Err(); err != nil {
		return nil, "", err
	}
	return r, ns, nil
}

func newStatusCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		sel      selection.Flags
		watch    bool
		revision int64
		timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME | -f FILENAME)",
		Short: "Show the status of the rollout, waiting for it to finish with --watch (the default)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if revision < 0 {
				return fmt.Errorf("revision must be a positive integer: %v", revision)
			}
			// Each object in turn, as kubectl, each with its own --timeout.
			found := false
			ns, err := visit(f, args, &sel, true, func(info *resource.Info) error {
				found = true
				return statusOf(cmd.Context(), f, streams, info, watch, revision, timeout)
			})
			if err == nil && !found {
				fmt.Fprintf(streams.ErrOut, "No resources found in %s namespace.\n", ns)
			}
			return err
		},
	}
	addSelectionFlags(cmd, &sel)
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "Watch the status of the rollout until it's done")
	cmd.Flags().Int64Var(&revision, "revision", 0, "Pin to a specific revision; 0 follows the latest")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait before giving up; 0 waits forever")
	return cmd
}

// statusOf prints the rollout status of one object, until it is done
// with watch.
func statusOf(ctx context.Context, f cmdutil.Factory, streams genericiooptions.IOStreams, info *resource.Info, watch bool, revision int64, timeout time.Duration) error {
	viewer, err := polymorphichelpers.StatusViewerFn(info.Mapping)
	if err != nil {
		return err
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	last := ""
	var statusErr error
	err = objwait.Until(ctx, dyn, info.Mapping, info.Namespace, info.Name, func(u *unstructured.Unstructured) bool {
		if u == nil {
			statusErr = fmt.Errorf("object has been deleted")
			return true
		}
		msg, done, err := viewer.Status(u, revision)
		if err != nil {
			statusErr = err
			return true
		}
		if msg != last {
			fmt.Fprint(streams.Out, msg)
			last = msg
		}
		return done || !watch
	})
	if statusErr != nil {
		return statusErr
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("timed out waiting for the condition")
	}
	return err
}

func newHistoryCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		sel      selection.Flags
		revision int64
	)
	printFlags := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME | -f FILENAME)",
		Short: "Show the revisions of a rollout",
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := visit(f, args, &sel, true, func(info *resource.Info) error {
				viewer, err := polymorphichelpers.HistoryViewerFn(f, info.Mapping)
				if err != nil {
					return err
				}
				if printFlags.OutputFlagSpecified() {
					// -o prints the revisions themselves (a deployment's
					// replica sets), oldest first.
					return printRevisions(viewer, info, revision, printFlags, streams)
				}
				out, err := viewer.ViewHistory(info.Namespace, info.Name, revision)
				if err != nil {
					return err
				}
				withRevision := ""
				if revision > 0 {
					withRevision = fmt.Sprintf("with revision #%d", revision)
				}
				// kubectl prints the table as the operation of a name
				// line, so it ends with a blank line.
				printFlags.NamePrintFlags.Operation = withRevision + "\n" + out
				p, err := printFlags.ToPrinter()
				if err != nil {
					return err
				}
				return p.PrintObj(info.Object, streams.Out)
			})
			return err
		},
	}
	addSelectionFlags(cmd, &sel)
	cmd.Flags().Int64Var(&revision, "revision", 0, "Show the pod template of this revision")
	printFlags.AddFlags(cmd)
	return cmd
}

func printRevisions(viewer polymorphichelpers.HistoryViewer, info *resource.Info, revision int64, printFlags *genericclioptions.PrintFlags, streams genericiooptions.IOStreams) error {
	p, err := printFlags.ToPrinter()
	if err != nil {
		return err
	}
	history, err := viewer.GetHistory(info.Namespace, info.Name)
	if err != nil {
		return err
	}
	if revision > 0 {
		obj, ok := history[revision]
		if !ok {
			return fmt.Errorf("unable to find the specified revision")
		}
		return p.PrintObj(obj, streams.Out)
	}
	revisions := make([]int64, 0, len(history))
	for r := range history {
		revisions = append(revisions, r)
	}
	slices.Sort(revisions)
	for _, r := range revisions {
		if err := p.PrintObj(history[r], streams.Out); err != nil {
			return err
		}
	}
	return nil
}

// patcher is a rollout subcommand that patches each object with what
// kubectl's polymorphic helper computes: pause, resume, restart.
type patcher struct {
	use, short string
	mutate     func(runtime.Object) ([]byte, error)
	done       string // the printed operation: "paused"
	// unchanged handles an object the helper leaves as it is.
	unchanged func(info *resource.Info) (op string, err error)
}

func newPauseCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, pause bool) *cobra.Command {
	if pause {
		return newPatchCmd(f, streams, patcher{use: "pause", short: "Stop rolling out template changes until resumed",
			mutate: polymorphichelpers.ObjectPauserFn, done: "paused",
			unchanged: func(*resource.Info) (string, error) { return "already paused", nil }})
	}
	return newPatchCmd(f, streams, patcher{use: "resume", short: "Resume a paused rollout",
		mutate: polymorphichelpers.ObjectResumerFn, done: "resumed",
		unchanged: func(*resource.Info) (string, error) { return "already resumed", nil }})
}

// newRestartCmd returns `rollout restart`: a new restartedAt annotation
// on the pod template, so a new revision replaces every pod.
func newRestartCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newPatchCmd(f, streams, patcher{use: "restart", short: "Replace every pod of a deployment through a rollout",
		mutate: polymorphichelpers.ObjectRestarterFn, done: "restarted",
		// The annotation has a resolution of a second.
		unchanged: func(info *resource.Info) (string, error) {
			return "", fmt.Errorf("failed to create patch for %v: if restart has already been triggered within the past second, please wait before attempting to trigger another", info.Name)
		}})
}

// newPatchCmd returns the subcommand: kubectl's flags, every object the
// arguments, -f, -k or -l pick, each one's line, and one error per object
// that failed (a kind the helper does not handle is "<resource> <name>
// pausing is not supported", and so on).
func newPatchCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, v patcher) *cobra.Command {
	var (
		sel          selection.Flags
		fieldManager string
	)
	printFlags := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   v.use + " RESOURCE",
		Short: v.short,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, ns, err := targets(f, args, &sel, true)
			if err != nil {
				return err
			}
			var errs []error
			infos, err := r.Infos()
			if err != nil {
				errs = append(errs, err)
			}
			patches := set.CalculatePatches(infos, scheme.DefaultJSONEncoder(), set.PatchFn(v.mutate))
			if len(patches) == 0 && len(errs) == 0 {
				fmt.Fprintf(streams.ErrOut, "No resources found in %s namespace.\n", ns)
				return nil
			}
			for _, patch := range patches {
				info := patch.Info
				if patch.Err != nil {
					errs = append(errs, fmt.Errorf("error: %s %q %w", info.Mapping.Resource.GroupResource(), info.Name, patch.Err))
					continue
				}
				op := v.done
				if len(patch.Patch) == 0 || string(patch.Patch) == "{}" {
					if op, err = v.unchanged(info); err != nil {
						errs = append(errs, err)
						continue
					}
				} else {
					obj, err := resource.NewHelper(info.Client, info.Mapping).
						WithFieldManager(fieldManager).
						Patch(info.Namespace, info.Name, types.StrategicMergePatchType, patch.Patch, nil)
					if err != nil {
						errs = append(errs, fmt.Errorf("failed to patch: %w", err))
						continue
					}
					if err := info.Refresh(obj, true); err != nil {
						errs = append(errs, err)
						continue
					}
				}
				printFlags.NamePrintFlags.Operation = op
				p, err := printFlags.ToPrinter()
				if err != nil {
					return err
				}
				if err := p.PrintObj(info.Object, streams.Out); err != nil {
					errs = append(errs, err)
				}
			}
			return utilerrors.NewAggregate(errs)
		},
	}
	// kubectl's -f, -k and -R, and the field manager its patch is
	// recorded under.
	addSelectionFlags(cmd, &sel)
	cmdutil.AddFieldManagerFlagVar(cmd, &fieldManager, "kubectl-rollout")
	printFlags.AddFlags(cmd)
	return cmd
}

// rollbackOfAppliedWarning is kubectl's warning when undo rolls back an
// object that apply manages: the next apply diffs against the annotation
// the rollback left as it was.
const rollbackOfAppliedWarning = "Warning: resource %[1]s was previously managed with '%[3]s apply'. " +
	"Rolling back will not update the %[2]s annotation, which may cause unexpected behavior on future '%[3]s apply' operations. " +
	"Consider using '%[3]s apply' with your previous configuration file instead.\n"

func newUndoCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		sel        selection.Flags
		toRevision int64
	)
	printFlags := genericclioptions.NewPrintFlags("rolled back").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [--to-revision=N]",
		Short: "Roll back to a previous revision (the one before the current by default)",
		RunE: func(cmd *cobra.Command, args []string) error {
			strategy, err := cmdutil.GetDryRunStrategy(cmd)
			if err != nil {
				return err
			}
			_, err = visit(f, args, &sel, true, func(info *resource.Info) error {
				if a, err := meta.Accessor(info.Object); err == nil {
					if _, ok := a.GetAnnotations()[corev1.LastAppliedConfigAnnotation]; ok {
						fmt.Fprintf(streams.ErrOut, rollbackOfAppliedWarning, info.ObjectName(), corev1.LastAppliedConfigAnnotation, "kubectl-lite")
					}
				}
				rb, err := polymorphichelpers.RollbackerFn(f, info.Mapping)
				if err != nil {
					return err
				}
				// A client dry run's result is the pod template it
				// would roll back to, printed in place of "rolled back".
				result, err := rb.Rollback(info.Object, nil, toRevision, strategy)
				if err != nil {
					return err
				}
				printFlags.NamePrintFlags.Operation = result + dryrun.Suffix(strategy)
				p, err := printFlags.ToPrinter()
				if err != nil {
					return err
				}
				return p.PrintObj(info.Object, streams.Out)
			})
			return err
		},
	}
	addSelectionFlags(cmd, &sel)
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "The revision to roll back to; 0 means the previous one")
	cmdutil.AddDryRunFlag(cmd)
	printFlags.AddFlags(cmd)
	return cmd
}
