// Package dryrun names a dry run the same way in what every kubectl-lite
// command that changes objects prints; the flag itself is kubectl's
// (cmdutil.AddDryRunFlag and cmdutil.GetDryRunStrategy).
package dryrun

import (
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

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
