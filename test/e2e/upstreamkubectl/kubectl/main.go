// Command kubectl is upstream kubectl, built from k8s.io/kubectl, so that the
// end-to-end tests drive kube-lite with the client users actually run.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

// main is kubectl's own: errors are printed the way kubectl prints them
// ("error: ..."), not by component-base's generic runner.
func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
