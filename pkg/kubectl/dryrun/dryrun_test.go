package dryrun

import (
	"testing"

	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// parse runs --dry-run as a user types it through a command's flags.
func parse(t *testing.T, args ...string) (cmdutil.DryRunStrategy, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "x"}
	cmdutil.AddDryRunFlag(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("ParseFlags(%q): %v", args, err)
	}
	return cmdutil.GetDryRunStrategy(cmd)
}

func TestFromCmd(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want cmdutil.DryRunStrategy
	}{
		{nil, cmdutil.DryRunNone},
		{[]string{"--dry-run=none"}, cmdutil.DryRunNone},
		{[]string{"--dry-run=client"}, cmdutil.DryRunClient},
		{[]string{"--dry-run=server"}, cmdutil.DryRunServer},
		// kubectl: a bare --dry-run is a client dry run, and it does not
		// take the next argument as its value.
		{[]string{"--dry-run"}, cmdutil.DryRunClient},
		{[]string{"--dry-run", "server"}, cmdutil.DryRunClient},
		// The deprecated booleans.
		{[]string{"--dry-run=true"}, cmdutil.DryRunClient},
		{[]string{"--dry-run=false"}, cmdutil.DryRunNone},
	} {
		if got, err := parse(t, tt.args...); err != nil || got != tt.want {
			t.Errorf("%q: got %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
	for _, bad := range []string{"bogus", ""} {
		_, err := parse(t, "--dry-run="+bad)
		want := `Invalid dry-run value (` + bad + `). Must be "none", "server", or "client".`
		if err == nil || err.Error() != want {
			t.Errorf("--dry-run=%s: got %v; want %q", bad, err, want)
		}
	}
}

func TestSuffix(t *testing.T) {
	for s, want := range map[cmdutil.DryRunStrategy]string{
		cmdutil.DryRunNone: "", cmdutil.DryRunClient: " (dry run)", cmdutil.DryRunServer: " (server dry run)",
	} {
		if got := Suffix(s); got != want {
			t.Errorf("Suffix(%v) = %q; want %q", s, got, want)
		}
	}
}
