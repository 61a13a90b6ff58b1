// Command kubectl is upstream kubectl, built from k8s.io/kubectl, so that the
// end-to-end tests drive kube-lite with the client users actually run.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
