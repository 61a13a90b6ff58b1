package delete

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func TestPropagation(t *testing.T) {
	tests := map[string]metav1.DeletionPropagation{
		"background": metav1.DeletePropagationBackground,
		"Foreground": metav1.DeletePropagationForeground,
		"orphan":     metav1.DeletePropagationOrphan,
		"true":       metav1.DeletePropagationBackground,
		"false":      metav1.DeletePropagationOrphan,
	}
	for in, want := range tests {
		if got, err := propagation(in); err != nil || got != want {
			t.Errorf("propagation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := propagation("sideways"); err == nil {
		t.Error("propagation(sideways) accepted")
	}
}

// TestDryRunFlag: delete takes --dry-run as kubectl does: bare (a client
// dry run), the deprecated booleans, and kubectl's words for a bad value.
func TestDryRunFlag(t *testing.T) {
	streams := genericiooptions.NewTestIOStreamsDiscard()
	for args, want := range map[string]cmdutil.DryRunStrategy{"--dry-run": cmdutil.DryRunClient, "--dry-run=false": cmdutil.DryRunNone} {
		cmd := NewCmd(nil, streams)
		if err := cmd.ParseFlags([]string{args}); err != nil {
			t.Fatalf("delete %s: %v", args, err)
		}
		if dry, err := cmdutil.GetDryRunStrategy(cmd); err != nil || dry != want {
			t.Errorf("delete %s: %v, %v; want %v", args, dry, err, want)
		}
	}
	for _, bad := range []string{"maybe", ""} {
		cmd := NewCmd(nil, streams)
		cmd.SetArgs([]string{"cm", "x", "--dry-run=" + bad})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		want := `Invalid dry-run value (` + bad + `). Must be "none", "server", or "client".`
		if err := cmd.Execute(); err == nil || err.Error() != want {
			t.Errorf("delete --dry-run=%s: %v; want %q", bad, err, want)
		}
	}
}

// TestForceWithGracePeriod: as kubectl, --force refuses a grace period
// above 0 (--now is one of 1) instead of deleting with it.
func TestForceWithGracePeriod(t *testing.T) {
	for _, args := range [][]string{{"--force", "--grace-period=5"}, {"--force", "--now"}} {
		cmd := NewCmd(nil, genericiooptions.NewTestIOStreamsDiscard())
		cmd.SetArgs(append([]string{"cm", "x"}, args...))
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		want := "--force and --grace-period greater than 0 cannot be specified together"
		if err := cmd.Execute(); err == nil || err.Error() != want {
			t.Errorf("delete %v: %v; want %q", args, err, want)
		}
	}
}
