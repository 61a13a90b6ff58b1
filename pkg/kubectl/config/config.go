// Package config holds `config view|use-context|get-contexts|current-context`,
// over the same kubeconfig files the other commands load.
package config

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"sigs.k8s.io/yaml"
)

// NewCmd returns `config`.
func NewCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config SUBCOMMAND",
		Short: "Modify or view kubeconfig files",
		// A misspelt subcommand is an error, not this command's help.
		Args: cobra.NoArgs,
		Run:  func(c *cobra.Command, _ []string) { _ = c.Help() },
	}
	cmd.AddCommand(newViewCmd(flags, streams), newUseContextCmd(flags, streams),
		newGetContextsCmd(flags, streams), newCurrentContextCmd(flags, streams))
	return cmd
}

func newViewCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		minify, raw, flatten bool
		output               string
	)
	cmd := &cobra.Command{
		Use:   "view",
		Short: "Show the merged kubeconfig (secrets redacted unless --raw)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			loader := flags.ToRawKubeConfigLoader()
			cfg, err := loader.RawConfig()
			if err != nil {
				return err
			}
			if minify {
				if err := clientcmdapi.MinifyConfig(&cfg); err != nil {
					return err
				}
			}
			if flatten {
				if err := clientcmdapi.FlattenConfig(&cfg); err != nil {
					return err
				}
			} else if !raw {
				clientcmdapi.ShortenConfig(&cfg)
			}
			return printConfig(&cfg, output, streams)
		},
	}
	cmd.Flags().BoolVar(&minify, "minify", false, "Only what the current context uses")
	cmd.Flags().BoolVar(&raw, "raw", false, "Show certificate data and tokens")
	cmd.Flags().BoolVar(&flatten, "flatten", false, "Inline referenced files")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "yaml or json")
	return cmd
}

// printConfig writes cfg in the v1 wire form.
func printConfig(cfg *clientcmdapi.Config, output string, streams genericiooptions.IOStreams) error {
	versioned, err := clientcmdlatest.Scheme.ConvertToVersion(cfg, clientcmdlatest.ExternalVersion)
	if err != nil {
		return err
	}
	// The v1 types carry the kubeconfig field names as JSON tags;
	// clientcmd's own codec writes YAML only.
	js, err := json.Marshal(versioned)
	if err != nil {
		return err
	}
	switch output {
	case "json":
		var v interface{}
		if err := json.Unmarshal(js, &v); err != nil {
			return err
		}
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		fmt.Fprintln(streams.Out, string(b))
	case "yaml", "":
		b, err := yaml.JSONToYAML(js)
		if err != nil {
			return err
		}
		fmt.Fprint(streams.Out, string(b))
	default:
		return fmt.Errorf("--output must be yaml or json")
	}
	return nil
}

func newUseContextCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "use-context CONTEXT_NAME",
		Short: "Set the current-context in a kubeconfig file",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			access := flags.ToRawKubeConfigLoader().ConfigAccess()
			cfg, err := access.GetStartingConfig()
			if err != nil {
				return err
			}
			if _, ok := cfg.Contexts[args[0]]; !ok {
				return fmt.Errorf("no context exists with the name: %q", args[0])
			}
			cfg.CurrentContext = args[0]
			if err := clientcmd.ModifyConfig(access, *cfg, true); err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "Switched to context %q.\n", args[0])
			return nil
		},
	}
}

func newCurrentContextCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "current-context",
		Short: "Display the current-context",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := flags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return fmt.Errorf("current-context is not set")
			}
			fmt.Fprintln(streams.Out, cfg.CurrentContext)
			return nil
		},
	}
}

func newGetContextsCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		output    string
		noHeaders bool
	)
	cmd := &cobra.Command{
		Use:   "get-contexts [NAME ...]",
		Short: "List the contexts; the current one is marked with *",
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := flags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				for n := range cfg.Contexts {
					names = append(names, n)
				}
				sort.Strings(names)
			}
			w := printers.GetNewTabWriter(streams.Out)
			defer w.Flush()
			if output == "name" {
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
				return nil
			}
			if output != "" {
				return fmt.Errorf("output must be one of '' or 'name'")
			}
			if !noHeaders {
				fmt.Fprintln(w, "CURRENT\tNAME\tCLUSTER\tAUTHINFO\tNAMESPACE")
			}
			for _, n := range names {
				c, ok := cfg.Contexts[n]
				if !ok {
					return fmt.Errorf("context %s not found", n)
				}
				cur := ""
				if n == cfg.CurrentContext {
					cur = "*"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", cur, n, c.Cluster, c.AuthInfo, c.Namespace)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "name: only the context names")
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "Omit headers")
	return cmd
}
