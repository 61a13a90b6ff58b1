package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// subPathMount makes sub, inside the volume at volPath, visible at a
// kubelet-private path and returns that path for the runtime to mount.
//
// Another container of the pod may be changing the volume meanwhile: a
// path checked here and then handed to the runtime could have a component
// replaced by a symlink to anywhere on the host before the runtime mounts
// it (CVE-2017-1002101). So the subPath is opened one component at a time
// without following symlinks, and the opened file itself is bind-mounted
// (through /proc/self/fd): what was checked is what the container gets.
func (kl *Kubelet) subPathMount(pod *v1.Pod, container string, index int, volName, volPath, sub string) (string, error) {
	if filepath.IsAbs(sub) || slices.Contains(strings.Split(filepath.ToSlash(sub), "/"), "..") {
		return "", fmt.Errorf("subpath %q must be a relative path within the volume, without '..'", sub)
	}
	base, err := filepath.EvalSymlinks(volPath)
	if err != nil {
		return "", fmt.Errorf("subpath %q: %w", sub, err)
	}
	if err := makeSubPathDir(base, volPath, sub); err != nil {
		return "", err
	}
	// Symlinks inside the volume (a configMap's keys are ones) are resolved
	// here, as upstream does; the open below then refuses any symlink, so
	// one swapped in after this check makes it fail rather than escape.
	rel, err := resolveWithin(base, volPath, sub, filepath.Join(base, sub))
	if err != nil {
		return "", err
	}
	fd, err := openBeneath(base, rel, sub)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("subpath %q: stat: %w", sub, err)
	}
	parent := filepath.Join(kl.volumes.PodDir(pod.UID), volume.SubPathsDir, volName, container)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return "", fmt.Errorf("subpath %q: %w", sub, err)
	}
	// mountinfo names mount points by their real path.
	if parent, err = filepath.EvalSymlinks(parent); err != nil {
		return "", fmt.Errorf("subpath %q: %w", sub, err)
	}
	target := filepath.Join(parent, strconv.Itoa(index))
	if err := prepareSubPathTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return "", fmt.Errorf("subpath %q: %w", sub, err)
	}
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("subpath %q: bind mount on %s: %w", sub, target, err)
	}
	return target, nil
}

// resolveWithin resolves the symlinks of path (sub inside the volume whose
// real path is base) and returns it relative to base, refusing a path that
// leaves the volume.
func resolveWithin(base, volPath, sub, path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("subpath %q: %w", sub, err)
	}
	rel, err := filepath.Rel(base, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("subpath %q not within volume path %q", sub, volPath)
	}
	return rel, nil
}

// openBeneath opens rel below the directory base one component at a time,
// never following a symlink, and returns an O_PATH descriptor.
func openBeneath(base, rel, sub string) (int, error) {
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("subpath %q: open volume: %w", sub, err)
	}
	if rel == "." {
		return fd, nil
	}
	for seg := range strings.SplitSeq(rel, "/") {
		child, err := unix.Openat(fd, seg, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("subpath %q: open %s: %w", sub, seg, err)
		}
		fd = child
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("subpath %q: stat %s: %w", sub, seg, err)
		}
		// O_PATH|O_NOFOLLOW opens a symlink itself rather than failing.
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, fmt.Errorf("subpath %q: unexpected symlink found %s", sub, seg)
		}
	}
	return fd, nil
}

// makeSubPathDir creates the missing directories of sub, as upstream does
// (with the volume directory's mode), each with mkdirat in a parent opened
// without following symlinks, so that nothing is created outside the volume.
func makeSubPathDir(base, volPath, sub string) error {
	missing := []string{}
	existing := filepath.Join(base, sub)
	for existing != base {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("subpath %q: %w", sub, err)
		}
		missing = append(missing, filepath.Base(existing))
		existing = filepath.Dir(existing)
	}
	if len(missing) == 0 {
		return nil
	}
	rel, err := resolveWithin(base, volPath, sub, existing)
	if err != nil {
		return err
	}
	fi, err := os.Stat(base)
	if err != nil {
		return fmt.Errorf("subpath %q: %w", sub, err)
	}
	perm := uint32(fi.Mode().Perm())
	fd, err := openBeneath(base, rel, sub)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for _, name := range slices.Backward(missing) {
		created := true
		if err := unix.Mkdirat(fd, name, perm); errors.Is(err, unix.EEXIST) {
			created = false // made meanwhile; the open below checks what it is
		} else if err != nil {
			return fmt.Errorf("subpath %q: mkdir %s: %w", sub, name, err)
		}
		child, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("subpath %q: open %s: %w", sub, name, err)
		}
		unix.Close(fd)
		fd = child
		// The umask must not narrow what the volume allows.
		if created {
			if err := unix.Fchmod(fd, perm); err != nil {
				return fmt.Errorf("subpath %q: chmod %s: %w", sub, name, err)
			}
		}
	}
	return nil
}

// prepareSubPathTarget leaves an unmounted directory or empty file at
// target. A mount left there by an earlier start of the container is
// replaced, so that a restart neither stacks mounts nor shows a stale file.
func prepareSubPathTarget(target string, dir bool) error {
	if err := volume.UnmountAll(target); err != nil {
		return err
	}
	fi, err := os.Lstat(target)
	switch {
	case err == nil && fi.IsDir() == dir:
		return nil
	case err == nil:
		// Only an empty directory or a file: never removes what it holds.
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("replace %s: %w", target, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if dir {
		return os.Mkdir(target, 0o750)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}
