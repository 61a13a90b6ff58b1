//go:build e2e

package e2eutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot is the directory of go.mod above the working directory; go test
// runs each package in its own directory, and scripts and ./cmd paths are
// relative to the root.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Run runs a command in the repository root and returns its combined
// output; on failure the error carries the output too, so that callers can
// report it as it is.
func Run(name string, args ...string) (string, error) {
	return RunWithEnv(nil, name, args...)
}

// RunWithEnv is Run with extra environment variables on top of the test's.
func RunWithEnv(env []string, name string, args ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// BuildBinaries builds the main packages pkgs (paths from the repository
// root, such as ./cmd/kube-lite-apiserver) into dir, each named after its
// directory.
func BuildBinaries(dir string, pkgs ...string) error {
	_, err := Run("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	return err
}
