//go:build e2e

// Package e2eutil holds what the end-to-end test packages share: finding
// the repository and running commands there, building the binaries,
// starting an apiserver process, and checking that a test left nothing on
// the host.
package e2eutil
