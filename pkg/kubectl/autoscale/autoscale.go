// Package autoscale holds `autoscale`: kubectl's own command
// (k8s.io/kubectl/pkg/cmd/autoscale), which creates an autoscaling/v2
// HorizontalPodAutoscaler, preceded by a look at whether the server serves
// one.
package autoscale

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kautoscale "k8s.io/kubectl/pkg/cmd/autoscale"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// hpaGroupVersion is the API kubectl's autoscale creates its object in.
const hpaGroupVersion = "autoscaling/v2"

// NewCmd returns `autoscale`. When the server does not serve
// horizontalpodautoscalers, kubectl falls back to autoscaling/v1 and, with
// no --cpu given, reports only that the settings do not fit v1 ("empty
// input"), hiding the server's answer; here the server's discovery answer
// is the error.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := kautoscale.NewCmdAutoscale(f, streams)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		// kubectl's checks of the flags come first, as in its own run.
		flags := kautoscale.NewAutoscaleOptions(streams)
		flags.Min, flags.Max = cmdutil.GetFlagInt32(cmd, "min"), cmdutil.GetFlagInt32(cmd, "max")
		flags.CPUPercent = cmdutil.GetFlagInt32(cmd, "cpu-percent")
		flags.CPU, flags.Memory = cmdutil.GetFlagString(cmd, "cpu"), cmdutil.GetFlagString(cmd, "memory")
		if err := flags.Validate(); err != nil {
			return err
		}
		dry, err := cmdutil.GetDryRunStrategy(cmd)
		if err != nil || dry == cmdutil.DryRunClient {
			return err
		}
		dc, err := f.ToDiscoveryClient()
		if err != nil {
			return err
		}
		resources, err := dc.ServerResourcesForGroupVersion(hpaGroupVersion)
		return servesHPA(resources, err)
	}
	return cmd
}

// servesHPA turns the server's list of autoscaling/v2 resources (or its
// refusal to list them) into autoscale's error, nil when it serves them.
func servesHPA(resources *metav1.APIResourceList, err error) error {
	if err != nil {
		return fmt.Errorf("autoscale creates %s horizontalpodautoscalers, which the server does not serve: GET /apis/%s: %w", hpaGroupVersion, hpaGroupVersion, err)
	}
	if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "horizontalpodautoscalers" }) {
		return fmt.Errorf("autoscale creates %s horizontalpodautoscalers, which the server does not serve", hpaGroupVersion)
	}
	return nil
}
