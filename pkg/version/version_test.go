package version

import (
	"os"
	"regexp"
	"testing"
)

// The version clients see must be the release of the k8s.io modules the
// programs are built with: kubectl warns about version skew from it, and users
// read it to know which API kube-lite speaks.
func TestVersionFollowsGoMod(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.(\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod does not require k8s.io/api v0.x.y")
	}
	minor, patch := string(m[1]), string(m[2])
	if want := "v1." + minor + "." + patch + "-kube-lite"; GitVersion != want {
		t.Errorf("GitVersion %q, want %q from go.mod", GitVersion, want)
	}
	if info := Get(); info.Major != "1" || info.Minor != minor || info.GitVersion != GitVersion {
		t.Errorf("Get() = %s.%s %s, want 1.%s %s", info.Major, info.Minor, info.GitVersion, minor, GitVersion)
	}
}
