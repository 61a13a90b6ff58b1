package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kube-lite/kube-lite/pkg/pki"
)

// Options are the command line of kube-lite-pki.
type Options struct {
	Dir            string
	APIServerURL   string
	APIServerHosts []string
	// Nodes are "name" or "name=addr[,addr...]".
	Nodes    []string
	Validity time.Duration
	Verbose  bool

	parsed pki.Options
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", ".kube-lite/pki", "Directory to write the CA, certificates, keys and kubeconfigs into.")
	fs.StringVar(&o.APIServerURL, "apiserver-url", "https://127.0.0.1:6443", "URL every kubeconfig points at; its host is added to the apiserver certificate.")
	fs.StringArrayVar(&o.APIServerHosts, "apiserver-host", nil, "Further DNS name or IP address of the apiserver, added to its certificate (repeatable).")
	fs.StringArrayVar(&o.Nodes, "node", nil, "Node to provision, as name or name=addr[,addr...] (repeatable); addresses go into its kubelet serving certificate.")
	fs.DurationVar(&o.Validity, "validity", pki.DefaultValidity, "Lifetime of issued certificates (the CA lives 10 years).")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "Log every certificate issued.")
}

// Validate parses the node list and checks the options as a whole.
func (o *Options) Validate() error {
	if o.Dir == "" {
		return errors.New("--dir must not be empty")
	}
	p := pki.Options{
		APIServerURL:   o.APIServerURL,
		APIServerHosts: o.APIServerHosts,
		Validity:       o.Validity,
	}
	for _, spec := range o.Nodes {
		name, addrs, hasAddrs := strings.Cut(spec, "=")
		name = strings.TrimSpace(name)
		if name == "" {
			return fmt.Errorf("--node %q: empty node name", spec)
		}
		p.Nodes = append(p.Nodes, name)
		if !hasAddrs {
			continue
		}
		if p.NodeHosts == nil {
			p.NodeHosts = map[string][]string{}
		}
		for _, a := range strings.Split(addrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				p.NodeHosts[name] = append(p.NodeHosts[name], a)
			}
		}
		if len(p.NodeHosts[name]) == 0 {
			return fmt.Errorf("--node %q: no address after '='", spec)
		}
	}
	if o.Validity <= 0 {
		return fmt.Errorf("--validity must be positive, got %s", o.Validity)
	}
	if err := p.Validate(); err != nil {
		return flagError(err)
	}
	o.parsed = p
	return nil
}

// flagError names the flag behind a pki.Options problem where it is not
// obvious from the message.
func flagError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "apiserver URL"):
		return fmt.Errorf("--apiserver-url: %w", err)
	case strings.Contains(msg, "node"):
		return fmt.Errorf("--node: %w", err)
	}
	return err
}

// Run writes the PKI and reports each file on out.
func (o *Options) Run(ctx context.Context, out io.Writer) error {
	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
	res, err := pki.WriteClusterPKI(ctx, o.Dir, o.parsed, pki.WithLogger(logger))
	if err != nil {
		return err
	}
	for _, f := range res.Files {
		line := fmt.Sprintf("%-8s %s", f.Action, filepath.Base(f.Path))
		if f.Reason != "" {
			line += " (" + f.Reason + ")"
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "PKI in %s; for kubectl: export KUBECONFIG=%s\n", o.Dir, res.Layout.AdminKubeconfig())
	return nil
}

func newCommand(out io.Writer) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "kube-lite-pki",
		Short: "Write the CA, certificates, keys and kubeconfigs of a kube-lite cluster",
		Long: `kube-lite-pki creates a cluster CA and everything signed by it: the apiserver
serving certificate, kubeconfigs for the admin, scheduler, controller-manager,
kube-lite-proxy (proxy.kubeconfig) and every node, kubelet serving certificates, the apiserver's kubelet client
certificate and the service account signing key. Re-running it keeps the CA
and every certificate that is still valid and still names what is asked for,
reissues the others, and adds new nodes.`,
		Example: `  kube-lite-pki --dir .kube-lite/pki --apiserver-url https://127.0.0.1:6443 \
    --apiserver-host 127.0.0.1 --apiserver-host myhost --node node-1 --node node-2=10.0.0.5`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), out)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
