// Command kube-lite-scheduler assigns pending pods to nodes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kube-lite/kube-lite/pkg/scheduler"
)

func main() {
	o := scheduler.NewOptions()
	fs := pflag.NewFlagSet("kube-lite-scheduler", pflag.ExitOnError)
	o.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-lite-scheduler:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kube-lite-scheduler:", err)
		os.Exit(1)
	}
}
