// Package auth holds `auth can-i`, answered by a SelfSubjectAccessReview.
package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// errDenied makes the command exit 1 after printing "no", as kubectl does.
type errDenied struct{}

func (errDenied) Error() string { return "" }

// NewCmd returns `auth` with `can-i`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Inspect authorization",
		// A misspelt subcommand is an error, not this command's help.
		Args: cobra.NoArgs,
		Run:  func(c *cobra.Command, _ []string) { _ = c.Help() },
	}
	cmd.AddCommand(newCanICmd(f, streams))
	return cmd
}

func newCanICmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		allNamespaces bool
		quiet         bool
		subresource   string
	)
	cmd := &cobra.Command{
		Use:   "can-i VERB [TYPE | TYPE/NAME | NONRESOURCEURL]",
		Short: "Check whether an action is allowed",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			review, err := buildReview(f, args, subresource, allNamespaces)
			if err != nil {
				return err
			}
			cs, err := f.KubernetesClientSet()
			if err != nil {
				return err
			}
			resp, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.WithoutCancel(cmd.Context()), review, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !quiet {
				if resp.Status.Allowed {
					fmt.Fprintln(streams.Out, "yes")
				} else {
					fmt.Fprintln(streams.Out, "no")
				}
			}
			if !resp.Status.Allowed {
				return errDenied{}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "Check in all namespaces")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "Only the exit code tells the answer")
	cmd.Flags().StringVar(&subresource, "subresource", "", "A subresource such as pods/log")
	return cmd
}

// IsDenied reports whether err is can-i's "no": nothing more to print.
func IsDenied(err error) bool {
	_, ok := err.(errDenied)
	return ok
}

func buildReview(f cmdutil.Factory, args []string, subresource string, allNamespaces bool) (*authorizationv1.SelfSubjectAccessReview, error) {
	verb := args[0]
	review := &authorizationv1.SelfSubjectAccessReview{}
	if len(args) == 1 {
		return nil, fmt.Errorf("you must specify two arguments: verb resource or verb resource/resourceName")
	}
	if strings.HasPrefix(args[1], "/") {
		review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: verb, Path: args[1]}
		return review, nil
	}
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	if allNamespaces {
		ns = ""
	}
	typ, name, _ := strings.Cut(args[1], "/")
	gvr := schema.GroupVersionResource{Resource: typ}
	if mapper, err := f.ToRESTMapper(); err == nil {
		if full, err := mapper.ResourceFor(schema.ParseGroupResource(typ).WithVersion("")); err == nil {
			gvr = full
		}
	}
	review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Group: gvr.Group, Resource: gvr.Resource, Subresource: subresource, Name: name,
	}
	return review, nil
}
