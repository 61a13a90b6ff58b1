// Package root assembles kubectl-lite's command tree.
package root

import (
	"flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/cmd/annotate"
	kapiresources "k8s.io/kubectl/pkg/cmd/apiresources"
	"k8s.io/kubectl/pkg/cmd/clusterinfo"
	"k8s.io/kubectl/pkg/cmd/diff"
	"k8s.io/kubectl/pkg/cmd/drain"
	"k8s.io/kubectl/pkg/cmd/edit"
	"k8s.io/kubectl/pkg/cmd/events"
	"k8s.io/kubectl/pkg/cmd/explain"
	"k8s.io/kubectl/pkg/cmd/expose"
	"k8s.io/kubectl/pkg/cmd/label"
	"k8s.io/kubectl/pkg/cmd/patch"
	"k8s.io/kubectl/pkg/cmd/replace"
	"k8s.io/kubectl/pkg/cmd/set"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kube-lite/kube-lite/pkg/kubectl/apiresources"
	"github.com/kube-lite/kube-lite/pkg/kubectl/apply"
	"github.com/kube-lite/kube-lite/pkg/kubectl/auth"
	"github.com/kube-lite/kube-lite/pkg/kubectl/autoscale"
	"github.com/kube-lite/kube-lite/pkg/kubectl/config"
	"github.com/kube-lite/kube-lite/pkg/kubectl/delete"
	"github.com/kube-lite/kube-lite/pkg/kubectl/describe"
	"github.com/kube-lite/kube-lite/pkg/kubectl/get"
	"github.com/kube-lite/kube-lite/pkg/kubectl/logs"
	"github.com/kube-lite/kube-lite/pkg/kubectl/rollout"
	"github.com/kube-lite/kube-lite/pkg/kubectl/run"
	"github.com/kube-lite/kube-lite/pkg/kubectl/scale"
	"github.com/kube-lite/kube-lite/pkg/kubectl/version"
	"github.com/kube-lite/kube-lite/pkg/kubectl/wait"
)

// NewCommand returns the root command. ConfigFlags resolves credentials
// exactly like kubectl: --kubeconfig, else $KUBECONFIG (merged), else
// ~/.kube/config, and keeps the discovery cache under ~/.kube/cache.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "kubectl-lite",
		Short:         "kubectl-lite controls a Kubernetes (or kube-lite) cluster",
		SilenceErrors: true,
		SilenceUsage:  true,
		Run:           func(c *cobra.Command, _ []string) { _ = c.Help() },
	}
	// A flag error names the command's help, as kubectl's does; the
	// subcommands inherit this.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nSee '%s --help' for usage.", err, c.CommandPath())
	})
	cmd.SetIn(streams.In)
	// No SetOut, as in kubectl: cobra prints a deprecated flag's warning
	// to the command's out writer when one is set, which would put it on
	// stdout amid -o yaml; unset, it goes to stderr and help to stdout.
	cmd.SetErr(streams.ErrOut)
	// Server warnings and client-side validation warnings share one
	// deduplicating writer, so one problem is printed once.
	warnings := rest.NewWarningWriter(streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	configFlags := genericclioptions.NewConfigFlags(true).WithWrapConfigFn(func(c *rest.Config) *rest.Config {
		c.WarningHandler = warnings
		return c
	})
	configFlags.AddFlags(cmd.PersistentFlags())
	f := cmdutil.NewFactory(configFlags)
	addVerbosityFlag(cmd)

	cmd.AddCommand(
		apply.NewApplyCmd(f, streams),
		apply.NewCreateCmd(f, streams),
		get.NewCmd(f, streams),
		describe.NewCmd(f, streams),
		delete.NewCmd(f, streams),
		logs.NewCmd(f, streams),
		scale.NewCmd(f, streams),
		rollout.NewCmd(f, streams),
		wait.NewCmd(f, streams),
		apiresources.NewCmd(f, streams),
		version.NewCmd(f, streams),
		auth.NewCmd(f, streams),
		config.NewCmd(configFlags, streams),
		// kubectl's own: they only patch metadata or read /openapi/v3,
		// which the server serves as Kubernetes does.
		label.NewCmdLabel(f, streams),
		annotate.NewCmdAnnotate(cmd.Use, f, streams),
		explain.NewCmdExplain(cmd.Use, f, streams),
		kapiresources.NewCmdAPIVersions(f, streams),
		clusterinfo.NewCmdClusterInfo(f, streams),
		// replace PUTs whole objects (--force deletes, waits until gone and
		// creates), which the server answers as Kubernetes does.
		replace.NewCmdReplace(f, streams),
		// Node maintenance: drain evicts through pods/eviction, which
		// honours PodDisruptionBudgets as Kubernetes does.
		drain.NewCmdCordon(f, streams),
		drain.NewCmdUncordon(f, streams),
		drain.NewCmdDrain(f, streams),
		// run and autoscale are kubectl's, after kube-lite's checks.
		run.NewCmd(f, streams),
		autoscale.NewCmd(f, streams),
		// kubectl's own verbs that only read, create, patch, update or
		// dry-run objects through the API, which the server answers as
		// Kubernetes does. Those that stream into a pod (exec, attach,
		// port-forward, cp, debug) and proxy and top are left out: the
		// server does not serve pods/exec, pods/attach, pods/portforward
		// nor the metrics API.
		expose.NewCmdExposeService(f, streams),
		patch.NewCmdPatch(f, streams),
		edit.NewCmdEdit(f, streams),
		set.NewCmdSet(f, streams),
		diff.NewCmdDiff(f, streams),
		events.NewCmdEvents(f, streams),
	)
	return cmd
}

// addVerbosityFlag offers kubectl's -v: client-go logs requests through
// klog (-v=6 shows each URL and status, -v=8 the bodies).
func addVerbosityFlag(cmd *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	cmd.PersistentFlags().AddGoFlag(fs.Lookup("v"))
}
