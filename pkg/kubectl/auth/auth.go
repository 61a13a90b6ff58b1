// Package auth holds `auth can-i` (a SelfSubjectAccessReview, or with
// --list a SelfSubjectRulesReview) and `auth whoami` (a SelfSubjectReview).
package auth

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlauth "k8s.io/kubectl/pkg/cmd/auth"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// errDenied makes the command exit 1 after printing "no", as kubectl does.
type errDenied struct{}

func (errDenied) Error() string { return "" }

// NewCmd returns `auth` with `can-i` and `whoami`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Inspect authorization",
		// kubectl's: help and exit 1, and a misspelt subcommand is a
		// usage error naming this command's help.
		Run: cmdutil.DefaultSubCommandRun(streams.ErrOut),
	}
	cmd.AddCommand(newCanICmd(f, streams), newWhoAmICmd(f, streams))
	return cmd
}

func newCanICmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	// kubectl's options do the work: resolving the resource, the
	// warnings for unknown verbs and cluster-scoped kinds, and --list's
	// table from a SelfSubjectRulesReview.
	o := &kubectlauth.CanIOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "can-i VERB [TYPE | TYPE/NAME | NONRESOURCEURL]",
		Short: "Check whether an action is allowed",
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if o.List {
				return o.RunAccessList()
			}
			allowed, err := o.RunAccessCheck()
			if err != nil {
				return err
			}
			if !allowed {
				return errDenied{}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Check in all namespaces")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "Only the exit code tells the answer")
	cmd.Flags().StringVar(&o.Subresource, "subresource", "", "A subresource such as pods/log")
	cmd.Flags().BoolVar(&o.List, "list", false, "List every action allowed in the namespace")
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "With --list, omit the headers")
	return cmd
}

// newWhoAmICmd asks the server who the credentials authenticate as, by a
// SelfSubjectReview.
func newWhoAmICmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	flags := kubectlauth.NewWhoAmIFlags(f, streams)
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the user, groups and extra attributes the server authenticates you as",
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := flags.ToOptions(cmd.Context(), args)
			if err != nil {
				return err
			}
			return o.Run()
		},
	}
	flags.AddFlags(cmd)
	return cmd
}

// IsDenied reports whether err is can-i's "no": nothing more to print.
func IsDenied(err error) bool {
	_, ok := err.(errDenied)
	return ok
}
