package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSubPathMountsAFileOrDirectoryAndNeverLeavesTheVolume(t *testing.T) {
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
	real, _ := filepath.EvalSymlinks(dir)
	want := map[string]string{
		"/etc/app.conf": filepath.Join(real, "app.conf"),
		"/new":          filepath.Join(real, "new/dir"),
		"/literal":      filepath.Join(real, "$(POD)"),
		"/expr":         filepath.Join(real, "logs/sub"),
	}
	for path, host := range want {
		if got[path] != host {
			t.Errorf("%s mounts %q, want %q", path, got[path], host)
		}
	}
	if fi, err := os.Stat(filepath.Join(real, "app.conf")); err != nil || !fi.Mode().IsRegular() {
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
