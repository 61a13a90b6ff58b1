// Command kube-lite-controller-manager runs the controllers that turn
// Deployments, Jobs, Nodes and Namespaces into the state they ask for.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

func main() {
	o := manager.NewOptions()
	fs := pflag.NewFlagSet("kube-lite-controller-manager", pflag.ExitOnError)
	o.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-lite-controller-manager:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kube-lite-controller-manager:", err)
		os.Exit(1)
	}
}
