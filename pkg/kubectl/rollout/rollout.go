// Package rollout holds `rollout status|history|undo|restart` for deployments.
package rollout

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/kubectl/objwait"
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
	cmd.AddCommand(newStatusCmd(f, streams), newHistoryCmd(f, streams), newUndoCmd(f, streams), newRestartCmd(f, streams, clock.RealClock{}))
	return cmd
}

func infosFor(f cmdutil.Factory, args []string, filenames *resource.FilenameOptions) ([]*resource.Info, error) {
	ns, enforce, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	if len(args) == 0 && cmdutil.IsFilenameSliceEmpty(filenames.Filenames, filenames.Kustomize) {
		return nil, fmt.Errorf("required resource not specified")
	}
	return f.NewBuilder().
		Unstructured().
		NamespaceParam(ns).DefaultNamespace().
		FilenameParam(enforce, filenames).
		ResourceTypeOrNameArgs(true, args...).
		ContinueOnError().
		Latest().
		Flatten().
		Do().Infos()
}

func ref(info *resource.Info) string {
	return strings.ToLower(info.Mapping.GroupVersionKind.GroupKind().String()) + "/" + info.Name
}

func newStatusCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		filenames resource.FilenameOptions
		watch     bool
		revision  int64
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME | -f FILENAME)",
		Short: "Show the status of the rollout, waiting for it to finish with --watch (the default)",
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := infosFor(f, args, &filenames)
			if err != nil {
				return err
			}
			if len(infos) != 1 {
				return fmt.Errorf("rollout status is only supported on individual resources and resource collections, but %d resources were found", len(infos))
			}
			info := infos[0]
			viewer, err := polymorphichelpers.StatusViewerFn(info.Mapping)
			if err != nil {
				return err
			}
			dyn, err := f.DynamicClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
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
		},
	}
	cmd.Flags().StringSliceVarP(&filenames.Filenames, "filename", "f", nil, "Files identifying the resource")
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "Watch the status of the rollout until it's done")
	cmd.Flags().Int64Var(&revision, "revision", 0, "Pin to a specific revision; 0 follows the latest")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait before giving up; 0 waits forever")
	return cmd
}

func newHistoryCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		filenames resource.FilenameOptions
		revision  int64
	)
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME | -f FILENAME)",
		Short: "Show the revisions of a rollout",
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := infosFor(f, args, &filenames)
			if err != nil {
				return err
			}
			for _, info := range infos {
				viewer, err := polymorphichelpers.HistoryViewerFn(f, info.Mapping)
				if err != nil {
					return err
				}
				out, err := viewer.ViewHistory(info.Namespace, info.Name, revision)
				if err != nil {
					return err
				}
				if revision > 0 {
					fmt.Fprintf(streams.Out, "%s with revision #%d\n%s", ref(info), revision, out)
				} else {
					fmt.Fprintf(streams.Out, "%s \n%s", ref(info), out)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&filenames.Filenames, "filename", "f", nil, "Files identifying the resource")
	cmd.Flags().Int64Var(&revision, "revision", 0, "Show the pod template of this revision")
	return cmd
}

func newUndoCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		filenames  resource.FilenameOptions
		toRevision int64
		dryRun     string
	)
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [--to-revision=N]",
		Short: "Roll back to a previous revision (the one before the current by default)",
		RunE: func(cmd *cobra.Command, args []string) error {
			strategy := cmdutil.DryRunNone
			switch dryRun {
			case "", "none":
			case "client":
				strategy = cmdutil.DryRunClient
			case "server":
				strategy = cmdutil.DryRunServer
			default:
				return fmt.Errorf(`invalid dry-run value (%v). Must be "none", "server", or "client"`, dryRun)
			}
			infos, err := infosFor(f, args, &filenames)
			if err != nil {
				return err
			}
			for _, info := range infos {
				rb, err := polymorphichelpers.RollbackerFn(f, info.Mapping)
				if err != nil {
					return err
				}
				result, err := rb.Rollback(info.Object, nil, toRevision, strategy)
				if err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "%s %s\n", ref(info), result)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&filenames.Filenames, "filename", "f", nil, "Files identifying the resource")
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "The revision to roll back to; 0 means the previous one")
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", `"none", "client" or "server"`)
	return cmd
}

// restartedAtAnnotation is what kubectl sets on the pod template to roll
// every pod: a changed template is a new revision.
const restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

func newRestartCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, clk clock.PassiveClock) *cobra.Command {
	var filenames resource.FilenameOptions
	cmd := &cobra.Command{
		Use:   "restart (TYPE NAME | TYPE/NAME)",
		Short: "Replace every pod of a deployment through a rollout",
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := infosFor(f, args, &filenames)
			if err != nil {
				return err
			}
			patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`,
				restartedAtAnnotation, clk.Now().Format(time.RFC3339))
			for _, info := range infos {
				if gk := info.Mapping.GroupVersionKind.GroupKind(); gk != (schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
					return fmt.Errorf("%s: restarting is not supported for %s", ref(info), gk.Kind)
				}
				if u, ok := info.Object.(*unstructured.Unstructured); ok {
					if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); paused {
						return fmt.Errorf("can't restart paused %s (run rollout resume first)", ref(info))
					}
				}
				if _, err := resource.NewHelper(info.Client, info.Mapping).
					Patch(info.Namespace, info.Name, types.StrategicMergePatchType, []byte(patch), nil); err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "%s restarted\n", ref(info))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&filenames.Filenames, "filename", "f", nil, "Files identifying the resource")
	return cmd
}
