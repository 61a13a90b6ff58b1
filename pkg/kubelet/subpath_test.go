package kubelet

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSubPathMountsAFileOrDirectoryAndNeverLeavesTheVolume(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	outside := t.TempDir()
	pod := testPod("sub", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD", Value: "sub"}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "data", MountPath: "/etc/app.conf", SubPath: "app.conf"},
			{Name: "data", MountPath: "/new", SubPath: "new/dir"},
			{Name: "data", MountPath: "/literal", SubPath: "$(POD)"},
			{Name: "data", MountPath: "/expr", SubPathExpr: "logs/$(POD)"},
		}
	})
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cleanSubPathsAtEnd(t, h, pod)
	dir := mounts["data"]
	// A file in the volume, as a configMap key would be.
	if err := os.WriteFile(filepath.Join(dir, "app.conf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := h.kl.containerConfig(t.Context(), pod, &pod.Spec.Containers[0], 0, "10.0.0.1", mounts)
	if err != nil {
		t.Fatalf("container config: %v", err)
	}
	got := map[string]string{}
	for _, m := range cfg.Mounts {
		got[m.ContainerPath] = m.HostPath
	}
	// The runtime gets kubelet-private bind mounts of what the subPaths
	// are in the volume.
	want := map[string]string{"/etc/app.conf": "app.conf", "/new": "new/dir", "/literal": "$(POD)", "/expr": "logs/sub"}
	for i, path := range []string{"/etc/app.conf", "/new", "/literal", "/expr"} {
		host := got[path]
		wantHost, _ := filepath.EvalSymlinks(filepath.Join(h.volumes.PodDir(pod.UID), "volume-subpaths", "data", "main", strconv.Itoa(i)))
		if host != wantHost {
			t.Errorf("%s mounts %q, want %q", path, host, wantHost)
		}
		if !sameFile(t, host, filepath.Join(dir, want[path])) {
			t.Errorf("%s: %s does not show %s of the volume", path, host, want[path])
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "app.conf")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the file subPath is no longer a file: %v %v", fi, err)
	}

	// A container made a symlink out of the volume: a subPath through it fails.
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"escape", "escape/new"} {
		pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: sub}}
		_, err := h.kl.containerConfig(t.Context(), pod, &pod.Spec.Containers[0], 0, "10.0.0.1", mounts)
		if err == nil || !strings.Contains(err.Error(), "not within volume path") {
			t.Errorf("subPath %s through a symlink out of the volume: err %v", sub, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("created %v outside the volume", entries)
	}
}
