// Package config holds `config` and its subcommands over the same
// kubeconfig files the other commands load. The subcommands are kubectl's
// own (k8s.io/kubectl/pkg/cmd/config): editing a user's kubeconfig must
// write exactly what kubectl writes, and print what kubectl prints.
package config

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubectlconfig "k8s.io/kubectl/pkg/cmd/config"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// NewCmd returns `config`.
func NewCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config SUBCOMMAND",
		Short: "Modify kubeconfig files",
		Long: `Modify kubeconfig files using subcommands like "kubectl-lite config set current-context my-context".

The loading order is kubectl's: --kubeconfig alone if given, else the files
in $KUBECONFIG merged (a change goes to the file defining the stanza, a new
stanza to the first file that exists), else ${HOME}/.kube/config.`,
		// Help on stderr and exit 1, and an unknown subcommand is a usage error.
		Run: cmdutil.DefaultSubCommandRun(streams.ErrOut),
	}
	access := lazyAccess{flags: flags}
	cmd.AddCommand(
		kubectlconfig.NewCmdConfigView(streams, access),
		kubectlconfig.NewCmdConfigSetCluster(streams.Out, access),
		kubectlconfig.NewCmdConfigSetCredentials(streams.Out, access),
		kubectlconfig.NewCmdConfigSetContext(flags, streams.Out, access),
		kubectlconfig.NewCmdConfigSet(streams.Out, access),
		kubectlconfig.NewCmdConfigUnset(streams.Out, access),
		kubectlconfig.NewCmdConfigCurrentContext(streams.Out, access),
		kubectlconfig.NewCmdConfigUseContext(streams.Out, access),
		kubectlconfig.NewCmdConfigGetContexts(streams, access),
		kubectlconfig.NewCmdConfigGetClusters(streams.Out, access),
		kubectlconfig.NewCmdConfigGetUsers(streams, access),
		kubectlconfig.NewCmdConfigDeleteCluster(streams.Out, access),
		kubectlconfig.NewCmdConfigDeleteContext(streams.Out, streams.ErrOut, access),
		kubectlconfig.NewCmdConfigDeleteUser(streams, access),
		kubectlconfig.NewCmdConfigRenameContext(streams.Out, access),
	)
	return cmd
}

// lazyAccess resolves the kubeconfig files only when a subcommand runs:
// the commands are built before the root's --kubeconfig flag is parsed.
type lazyAccess struct {
	flags *genericclioptions.ConfigFlags
}

var _ clientcmd.ConfigAccess = lazyAccess{}

func (a lazyAccess) access() clientcmd.ConfigAccess {
	return a.flags.ToRawKubeConfigLoader().ConfigAccess()
}

func (a lazyAccess) GetLoadingPrecedence() []string { return a.access().GetLoadingPrecedence() }

func (a lazyAccess) GetStartingConfig() (*clientcmdapi.Config, error) {
	return a.access().GetStartingConfig()
}

func (a lazyAccess) GetDefaultFilename() string { return a.access().GetDefaultFilename() }

func (a lazyAccess) IsExplicitFile() bool { return a.access().IsExplicitFile() }

func (a lazyAccess) GetExplicitFile() string { return a.access().GetExplicitFile() }
