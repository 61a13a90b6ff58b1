// Package version is kube-lite's one version: the Kubernetes release whose API
// every kube-lite program speaks and is built against (k8s.io/* modules in
// go.mod), reported by the apiserver's /version, the kubelet's Node and
// kubectl-lite's `version`.
package version

import (
	"runtime"
	"runtime/debug"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// GitVersion follows the k8s.io/* module release in go.mod, with kube-lite's
// suffix so that a client can tell it is not talking to upstream.
const GitVersion = "v1.36.3-kube-lite"

// Get describes the running binary: the API level and the commit it was built
// from, when the build recorded one.
func Get() apimachineryversion.Info {
	info := apimachineryversion.Info{
		Major:        "1",
		Minor:        "36",
		GitVersion:   GitVersion,
		GitTreeState: "clean",
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitCommit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					info.GitTreeState = "dirty"
				}
			}
		}
	}
	return info
}
