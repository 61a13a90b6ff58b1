package fieldmanager_test

import (
	"strings"
	"testing"

	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
)

// The manager of a write that names none comes from the client's user
// agent, as upstream derives it.
func TestManagerOrUserAgent(t *testing.T) {
	long := strings.Repeat("abcdefgh", 20)
	cases := []struct{ manager, agent, want string }{
		{"mine", "kubectl/v1.36.3 (linux/amd64) kubernetes/abc", "mine"},
		{"", "kubectl/v1.36.3 (linux/amd64) kubernetes/abc", "kubectl"},
		{"", "kubectl-client-side-apply/v1.36.3", "kubectl-client-side-apply"},
		{"", "kube-lite-controller-manager/v0.1 (linux/amd64)", "kube-lite-controller-manager"},
		{"", "ab\x01c/1", "abc"},
		{"", "", ""},
		{"", long, long[:128]},
	}
	for _, tc := range cases {
		if got := fieldmanager.ManagerOrUserAgent(tc.manager, tc.agent); got != tc.want {
			t.Errorf("ManagerOrUserAgent(%q, %q) = %q, want %q", tc.manager, tc.agent, got, tc.want)
		}
	}
}
