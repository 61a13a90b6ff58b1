// Command kube-lite-apiserver serves the Kubernetes API on etcd.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
)

func main() {
	o := apiserver.NewOptions()
	fs := pflag.NewFlagSet("kube-lite-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := apiserver.Run(ctx, o, nil); err != nil {
		fmt.Fprintf(os.Stderr, "kube-lite-apiserver: %v\n", err)
		os.Exit(1)
	}
}
