// Package run holds `run`: kubectl's own command (k8s.io/kubectl/pkg/cmd/run),
// which builds the Pod from kubectl's defaults, preceded by checks that
// refuse bad input in one line before any request is sent.
package run

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	krun "k8s.io/kubectl/pkg/cmd/run"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// NewCmd returns `run`. kubectl checks the image reference and the pull
// policy itself (the policy with a second line pointing at its help), but
// leaves the name and the labels' keys and values to the server; here all
// are checked before kubectl's command runs, so that a typo costs no
// request and reads as one line.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := krun.NewCmdRun(f, streams)
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		return check(inputOf(cmd, args))
	}
	return cmd
}

// input is what run's checks look at.
type input struct {
	// name is empty when none was given before `--`; kubectl's own
	// usage error reports that.
	name       string
	image      string
	pullPolicy string
	labels     string
	// expose: the name is a Service's too.
	expose bool
	// attach lists the flags given that need pods/attach.
	attach []string
}

func inputOf(cmd *cobra.Command, args []string) input {
	in := input{
		image:      cmdutil.GetFlagString(cmd, "image"),
		pullPolicy: cmdutil.GetFlagString(cmd, "image-pull-policy"),
		labels:     cmdutil.GetFlagString(cmd, "labels"),
		expose:     cmdutil.GetFlagBool(cmd, "expose"),
	}
	if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
		in.name = args[0]
	}
	for _, flag := range []string{"stdin", "tty", "attach", "rm"} {
		if cmdutil.GetFlagBool(cmd, flag) {
			in.attach = append(in.attach, "--"+flag)
		}
	}
	return in
}

// check refuses, in one line each, what would fail later: flags that need
// attach, which kube-lite does not serve yet; an image that is not a valid
// reference (docker's grammar, as containerd parses it); an unknown pull
// policy; a name that cannot also be the container's name (and with
// --expose the Service's); labels that are not valid label keys and values.
func check(in input) error {
	if len(in.attach) > 0 {
		return fmt.Errorf("%s: kube-lite does not serve pods/attach yet; run the pod without -i/--stdin, -t/--tty, --attach and --rm, and read its output with 'kubectl-lite logs -f %s'",
			strings.Join(in.attach, ", "), podArg(in.name))
	}
	if in.image != "" {
		// kubectl's own check and words first; the parser then also
		// refuses what the pattern lets through (names over 255
		// characters, a 64-hex-digit repository).
		if !reference.ReferenceRegexp.MatchString(in.image) {
			return fmt.Errorf("Invalid image name %q: %v", in.image, reference.ErrReferenceInvalidFormat) //nolint:staticcheck // kubectl's wording
		}
		if _, err := reference.ParseNormalizedNamed(in.image); err != nil {
			return fmt.Errorf("Invalid image name %q: %v", in.image, err) //nolint:staticcheck // kubectl's wording
		}
	}
	switch corev1.PullPolicy(in.pullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("invalid image pull policy: %s", in.pullPolicy)
	}
	if in.name != "" {
		// The name is the container's too, so it must be a DNS-1123
		// label, not only a subdomain as a pod's name may be.
		errs := validation.IsDNS1123Label(in.name)
		if len(errs) == 0 && in.expose {
			// With --expose it names a Service too: a DNS-1035 label.
			errs = validation.IsDNS1035Label(in.name)
		}
		if len(errs) > 0 {
			return fmt.Errorf("invalid name %q: %s", in.name, strings.Join(errs, "; "))
		}
	}
	return checkLabels(in.labels)
}

// checkLabels parses --labels as kubectl does (key=value, comma
// separated) and checks each key and value as the server would.
func checkLabels(spec string) error {
	if spec == "" {
		return nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.Contains(v, "=") {
			return fmt.Errorf("unexpected label spec: %s", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("invalid label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("invalid label value %q for key %q: %s", v, k, strings.Join(errs, "; "))
		}
	}
	return nil
}

func podArg(name string) string {
	if name == "" {
		return "NAME"
	}
	return name
}
