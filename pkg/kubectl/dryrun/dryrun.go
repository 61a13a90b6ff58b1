// Package dryrun is the --dry-run flag of every kubectl-lite command that
// changes objects, so that apply, create, delete, scale and rollout undo
// accept the same values, word a bad one the same way, and name a dry run
// the same way in what they print.
package dryrun

import (
	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// AddFlag adds --dry-run as kubectl declares it: "none" by default, and a
// bare --dry-run (no value) means a client dry run, so `apply -f x
// --dry-run` works as it does with kubectl instead of failing with "flag
// needs an argument".
func AddFlag(cmd *cobra.Command) {
	cmdutil.AddDryRunFlag(cmd)
}

// FromCmd is the strategy the command's --dry-run asks for, parsed by
// kubectl's own parser: "none", "client", "server", a bare --dry-run, and
// the deprecated booleans (each with kubectl's deprecation warning); any
// other value is kubectl's `Invalid dry-run value (x). Must be "none",
// "server", or "client".`
func FromCmd(cmd *cobra.Command) (cmdutil.DryRunStrategy, error) {
	return cmdutil.GetDryRunStrategy(cmd)
}

// Suffix is what kubectl appends to an operation ("created", "deleted
// from default namespace", "scaled", ...) under each strategy.
func Suffix(s cmdutil.DryRunStrategy) string {
	switch s {
	case cmdutil.DryRunClient:
		return " (dry run)"
	case cmdutil.DryRunServer:
		return " (server dry run)"
	}
	return ""
}
