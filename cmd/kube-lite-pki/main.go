// Command kube-lite-pki writes the certificates, keys and kubeconfigs of a
// kube-lite cluster into one directory, and keeps them current on re-runs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCommand(os.Stdout).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-lite-pki: "+err.Error())
		os.Exit(1)
	}
}
