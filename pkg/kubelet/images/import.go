// Package images side-loads OCI image tarballs into containerd's k8s.io
// namespace, where its CRI plugin finds them: the air-gapped way to have the
// sandbox and test images present without a registry.
package images

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
)

// CRINamespace is the containerd namespace the CRI plugin uses.
const CRINamespace = "k8s.io"

// ImportDir imports every *.tar in dir into the containerd at address and
// unpacks each image for snapshotter, returning the names imported.
func ImportDir(ctx context.Context, address, dir, snapshotter string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read image dir: %w", err)
	}
	var tarballs []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".tar") || strings.HasSuffix(e.Name(), ".oci")) {
			tarballs = append(tarballs, filepath.Join(dir, e.Name()))
		}
	}
	if len(tarballs) == 0 {
		return nil, nil
	}
	client, err := containerd.New(strings.TrimPrefix(address, "unix://"), containerd.WithDefaultNamespace(CRINamespace))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, CRINamespace)
	if snapshotter == "" {
		snapshotter = containerd.DefaultSnapshotter
	}
	var names []string
	for _, path := range tarballs {
		imported, err := importOne(ctx, client, path, snapshotter)
		if err != nil {
			return names, err
		}
		names = append(names, imported...)
	}
	return names, nil
}

func importOne(ctx context.Context, client *containerd.Client, path, snapshotter string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	imgs, err := client.Import(ctx, f, containerd.WithAllPlatforms(false))
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	var names []string
	for _, img := range imgs {
		image := containerd.NewImage(client, img)
		// The CRI plugin creates containers from unpacked snapshots only.
		if err := image.Unpack(ctx, snapshotter); err != nil {
			return names, fmt.Errorf("unpack %s: %w", img.Name, err)
		}
		slog.Info("imported image", "image", img.Name, "from", path)
		names = append(names, img.Name)
	}
	return names, nil
}
