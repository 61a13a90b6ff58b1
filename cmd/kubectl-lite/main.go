// Command kubectl-lite is kube-lite's kubectl: apply, get, describe, delete,
// logs and friends against any Kubernetes API server.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kube-lite/kube-lite/pkg/kubectl/auth"
	"github.com/kube-lite/kube-lite/pkg/kubectl/root"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd := root.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.ExecuteContext(ctx)
	if auth.IsDenied(err) {
		// can-i already printed "no"; the exit code carries it too.
		os.Exit(1)
	}
	if err != nil {
		// CheckErr prints errors the way kubectl does
		// (`Error from server (NotFound): ...`) and exits 1.
		cmdutil.CheckErr(err)
	}
}
