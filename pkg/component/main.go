package component

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// Command is what a daemon's options offer its main.
type Command interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
	Run(ctx context.Context) error
}

// Main parses the command line into c, validates it and runs it until
// SIGINT or SIGTERM. It exits the process: 2 for bad flags, 1 for a failed run.
func Main(name string, c Command) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "%s: %v (see --help)\n", name, err)
		os.Exit(2)
	}
	if err := c.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.Run(ctx); err != nil {
		stop()
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
