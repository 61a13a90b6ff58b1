package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SubPathsDir, in a pod's directory, holds the bind mounts that subPath
// volumeMounts hand to the runtime: <pod dir>/volume-subpaths/<volume>/<container>/<index>,
// as upstream lays them out.
const SubPathsDir = "volume-subpaths"

// UnmountAll unmounts every mount stacked on path.
func UnmountAll(path string) error {
	m := SysMounter{}
	for {
		mounted, err := m.IsMountPoint(path)
		if err != nil || !mounted {
			return err
		}
		if err := m.Unmount(path); err != nil {
			return err
		}
	}
}

// cleanSubPaths unmounts and removes a pod's subPath bind mounts. It never
// removes recursively: a mount point that is still mounted fails to be
// removed instead of having the volume's files deleted through it.
func cleanSubPaths(podDir string) error {
	real, err := filepath.EvalSymlinks(filepath.Join(podDir, SubPathsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clean subpaths: %w", err)
	}
	vols, err := os.ReadDir(real)
	if err != nil {
		return fmt.Errorf("clean subpaths: %w", err)
	}
	for _, vol := range vols {
		// <volume>/<container>/<index>: the mount points are two levels down.
		if err := removeSubPathLevels(filepath.Join(real, vol.Name()), 2); err != nil {
			return fmt.Errorf("clean subpaths: %w", err)
		}
	}
	if err := os.Remove(real); err != nil {
		return fmt.Errorf("clean subpaths: %w", err)
	}
	return nil
}

// removeSubPathLevels removes dir after its entries, down to the mount
// points depth levels below it, each unmounted before it is removed.
func removeSubPathLevels(dir string, depth int) error {
	if depth == 0 {
		if err := UnmountAll(dir); err != nil {
			return err
		}
		return os.Remove(dir)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if err := removeSubPathLevels(filepath.Join(dir, e.Name()), depth-1); err != nil {
			return err
		}
	}
	return os.Remove(dir)
}
