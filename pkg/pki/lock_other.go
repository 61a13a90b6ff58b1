//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package pki

// lockDir is a no-op where flock(2) is not available; concurrent runs on one
// directory are then the caller's to avoid.
func lockDir(dir string) (unlock func(), err error) { return func() {}, nil }
