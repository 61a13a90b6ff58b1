package images

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeCtr writes a ctr stand-in that logs its arguments to calls and answers
// as ctr 1.6 does: one "unpacking" line per image, or an error on stderr for
// a tarball named bad.tar.
func fakeCtr(t *testing.T) (ctr, calls string) {
	t.Helper()
	dir := t.TempDir()
	ctr, calls = filepath.Join(dir, "ctr"), filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$@" >> ` + calls + `
for last; do :; done
case "$last" in
*/bad.tar) echo 'ctr: unrecognized image format' >&2; exit 1 ;;
esac
echo "unpacking kube-lite.local/$(basename "$last" .tar):1.0 (sha256:0123)...done"
`
	if err := os.WriteFile(ctr, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return ctr, calls
}

func imageDir(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.tar"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImportDirImportsEveryTarball(t *testing.T) {
	ctr, calls := fakeCtr(t)
	dir := imageDir(t, "busybox.tar", "pause.tar", "README")
	im := Importer{Ctr: ctr, Address: "unix:///run/kl/containerd.sock", Snapshotter: "overlayfs"}
	names, err := im.ImportDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kube-lite.local/busybox:1.0", "kube-lite.local/pause:1.0"}; !reflect.DeepEqual(names, want) {
		t.Errorf("imported %q, want %q", names, want)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"--address /run/kl/containerd.sock --namespace k8s.io images import --snapshotter overlayfs " + filepath.Join(dir, "busybox.tar"),
		"--address /run/kl/containerd.sock --namespace k8s.io images import --snapshotter overlayfs " + filepath.Join(dir, "pause.tar"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ctr ran as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestImportDirReportsCtrErrors(t *testing.T) {
	ctr, _ := fakeCtr(t)
	dir := imageDir(t, "a.tar", "bad.tar")
	names, err := Importer{Ctr: ctr, Address: "/run/c.sock"}.ImportDir(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "bad.tar") || !strings.Contains(err.Error(), "unrecognized image format") {
		t.Fatalf("err = %v, want one naming bad.tar and ctr's message", err)
	}
	if want := []string{"kube-lite.local/a:1.0"}; !reflect.DeepEqual(names, want) {
		t.Errorf("imported before the failure %q, want %q", names, want)
	}
}

func TestImportDirWithoutTarballsNeedsNoCtr(t *testing.T) {
	dir := imageDir(t, "README")
	names, err := Importer{Ctr: filepath.Join(t.TempDir(), "missing-ctr")}.ImportDir(context.Background(), dir)
	if err != nil || len(names) != 0 {
		t.Fatalf("ImportDir = %q, %v; want nothing imported and no error", names, err)
	}
}

func TestImportDirMissingCtr(t *testing.T) {
	dir := imageDir(t, "pause.tar")
	_, err := Importer{Ctr: filepath.Join(t.TempDir(), "missing-ctr")}.ImportDir(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "missing-ctr") {
		t.Fatalf("err = %v, want one naming the ctr binary", err)
	}
}
