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
	dir := filepath.Join(podDir, SubPathsDir)
	real, err := filepath.EvalSymlinks(dir)
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
		volDir := filepath.Join(real, vol.Name())
		containers, _ := os.ReadDir(volDir)
		for _, c := range containers {
			cDir := filepath.Join(volDir, c.Name())
			mounts, _ := os.ReadDir(cDir)
			for _, m := range mounts {
				p := filepath.Join(cDir, m.Name())
				if err := UnmountAll(p); err != nil {
					return fmt.Errorf("clean subpaths: %w", err)
				}
				if err := os.Remove(p); err != nil {
					return fmt.Errorf("clean subpaths: %w", err)
				}
			}
			if err := os.Remove(cDir); err != nil {
				return fmt.Errorf("clean subpaths: %w", err)
			}
		}
		if err := os.Remove(volDir); err != nil {
			return fmt.Errorf("clean subpaths: %w", err)
		}
	}
	if err := os.Remove(real); err != nil {
		return fmt.Errorf("clean subpaths: %w", err)
	}
	return nil
}
