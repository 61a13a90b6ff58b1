package volume

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const dataDirName = "..data"

// writeAtomic makes dir show exactly files, switching from the old content
// to the new in one rename of the ..data symlink, so a reader never sees a
// half-written update (the layout upstream's atomic writer uses):
//
//	dir/..<timestamp>/key     the payload
//	dir/..data -> ..<timestamp>
//	dir/key -> ..data/key
func writeAtomic(dir string, files map[string]file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for path := range files {
		if path == "" || filepath.IsAbs(path) || strings.HasPrefix(path, "..") || strings.Contains(path, "/../") {
			return fmt.Errorf("invalid path %q", path)
		}
	}
	oldTarget, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldTarget != "" && sameContent(filepath.Join(dir, oldTarget), files) {
		return nil
	}
	tsDir, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("create payload dir: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	for path, f := range files {
		full := filepath.Join(tsDir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := os.Chmod(full, f.mode); err != nil {
			return err
		}
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return fmt.Errorf("symlink payload: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return fmt.Errorf("switch payload: %w", err)
	}
	// User-visible names: one symlink per top-level entry into ..data.
	want := map[string]bool{}
	for path := range files {
		top := strings.SplitN(path, "/", 2)[0]
		want[top] = true
		link := filepath.Join(dir, top)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDirName, top) {
			continue
		}
		_ = os.RemoveAll(link)
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
			return fmt.Errorf("symlink %s: %w", top, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			if name != dataDirName && name != filepath.Base(tsDir) {
				_ = os.RemoveAll(filepath.Join(dir, name))
			}
			continue
		}
		if !want[name] {
			_ = os.RemoveAll(filepath.Join(dir, name))
		}
	}
	return nil
}

func sameContent(dir string, files map[string]file) bool {
	n := 0
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		f, ok := files[rel]
		if !ok || fi.Mode().Perm() != f.mode.Perm() {
			return fmt.Errorf("differs")
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.data) {
			return fmt.Errorf("differs")
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}
