//go:build linux || darwin || freebsd || netbsd || openbsd

package pki

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockFile is taken by WriteClusterPKI for the whole run.
const lockFile = ".lock"

// lockDir serialises writers of one PKI directory, e.g. several nodes'
// provisioning scripts sharing a volume: two runs creating a CA at once would
// each sign certificates with a CA that only one of them gets to keep.
// The lock is advisory and released when the returned func is called (or
// the process dies).
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("create directory %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, privateMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
