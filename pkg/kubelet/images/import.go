// Package images side-loads OCI image tarballs into containerd's k8s.io
// namespace, where its CRI plugin finds them: the air-gapped way to have the
// sandbox and test images present without a registry.
//
// The import runs containerd's own ctr CLI, which ships in the same package as
// containerd, instead of linking containerd's Go client: the client is used
// once at start but would make up a large part of the kubelet's binary, whose
// pages stay resident for the daemon's whole life.
package images

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CRINamespace is the containerd namespace the CRI plugin uses.
const CRINamespace = "k8s.io"

// Importer imports image tarballs through ctr.
type Importer struct {
	// Ctr is the ctr binary; empty means "ctr" from $PATH.
	Ctr string
	// Address is containerd's socket (with or without unix://).
	Address string
	// Snapshotter is the one images are unpacked for; the CRI plugin creates
	// containers from unpacked snapshots only. Empty means containerd's default.
	Snapshotter string
}

// ImportDir imports every *.tar (or *.oci) in dir, unpacking each image,
// and returns the names imported.
func (im Importer) ImportDir(ctx context.Context, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read image dir: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".tar") || strings.HasSuffix(e.Name(), ".oci")) {
			continue
		}
		imported, err := im.importOne(ctx, filepath.Join(dir, e.Name()))
		if err != nil {
			return names, err
		}
		names = append(names, imported...)
	}
	return names, nil
}

func (im Importer) importOne(ctx context.Context, path string) ([]string, error) {
	ctr := im.Ctr
	if ctr == "" {
		ctr = "ctr"
	}
	args := []string{"--address", strings.TrimPrefix(im.Address, "unix://"), "--namespace", CRINamespace,
		"images", "import"}
	if im.Snapshotter != "" {
		args = append(args, "--snapshotter", im.Snapshotter)
	}
	args = append(args, path)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ctr, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("import %s with %s: %w: %s", path, ctr, err, strings.TrimSpace(stderr.String()))
	}
	names := unpacked(stdout.Bytes())
	for _, name := range names {
		slog.Info("imported image", "image", name, "from", path)
	}
	return names, nil
}

// unpacked reads the image names from ctr's progress lines,
// "unpacking NAME (sha256:...)...done".
func unpacked(out []byte) []string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "unpacking ")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, " ("); ok {
			names = append(names, name)
		}
	}
	return names
}
