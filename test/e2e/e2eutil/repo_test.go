//go:build e2e

package e2eutil

import (
	"strings"
	"testing"
)

func TestRunReportsOutputOfAFailure(t *testing.T) {
	if out, err := Run("sh", "-c", "test -f go.mod && echo at the root"); err != nil || out != "at the root\n" {
		t.Fatalf("Run in the repository root = %q, %v", out, err)
	}
	_, err := Run("sh", "-c", "echo broken >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("Run of a failing command: error %v, want one that carries its output", err)
	}
}
