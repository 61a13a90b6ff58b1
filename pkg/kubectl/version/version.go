// Package version holds `version`: the client's build and the server's /version.
package version

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/yaml"

	buildversion "github.com/kube-lite/kube-lite/pkg/version"
)

// Versions is what -o json|yaml prints.
type Versions struct {
	ClientVersion *apimachineryversion.Info `json:"clientVersion,omitempty"`
	ServerVersion *apimachineryversion.Info `json:"serverVersion,omitempty"`
}

// NewCmd returns `version`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		clientOnly bool
		output     string
	)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server version information",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return fmt.Errorf("extra arguments: %v", args)
			}
			client := buildversion.Get()
			v := Versions{ClientVersion: &client}
			var serverErr error
			if !clientOnly {
				dc, err := f.ToDiscoveryClient()
				if err == nil {
					v.ServerVersion, serverErr = dc.ServerVersion()
				} else {
					serverErr = err
				}
			}
			switch output {
			case "":
				fmt.Fprintf(streams.Out, "Client Version: %s\n", v.ClientVersion.GitVersion)
				if v.ServerVersion != nil {
					fmt.Fprintf(streams.Out, "Server Version: %s\n", v.ServerVersion.GitVersion)
				}
			case "json":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(streams.Out, string(b))
			case "yaml":
				b, err := yaml.Marshal(v)
				if err != nil {
					return err
				}
				fmt.Fprint(streams.Out, string(b))
			default:
				return fmt.Errorf("--output must be 'yaml' or 'json'")
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Only the client version (no server needed)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "yaml or json")
	return cmd
}
