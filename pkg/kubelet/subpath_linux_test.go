package kubelet

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// requireRoot skips tests that bind-mount: CI runs them as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
}

// cleanSubPathsAtEnd unmounts the pod's subPath mounts before the test's
// temporary directories are removed (cleanups run last first).
func cleanSubPathsAtEnd(t *testing.T, h *harness, pod *v1.Pod) {
	t.Helper()
	t.Cleanup(func() {
		if err := h.volumes.TearDown(pod.UID); err != nil {
			t.Errorf("clean subpaths: %v", err)
		}
	})
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

// mountsUnder lists the mount points at or below dir, as the kernel has them.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == real || strings.HasPrefix(fields[4], real+"/")) {
			out = append(out, fields[4])
		}
	}
	return out
}

func subPathPod(name string, vol v1.VolumeSource, mounts ...v1.VolumeMount) *v1.Pod {
	return testPod(name, func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: vol}}
		p.Spec.Containers[0].VolumeMounts = mounts
	})
}

func emptyDir() v1.VolumeSource { return v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}} }

// hostMountsOf is what the runtime is asked to mount, by container path.
func hostMountsOf(t *testing.T, h *harness, pod *v1.Pod, mounts map[string]string) map[string]string {
	t.Helper()
	cfg, err := h.kl.containerConfig(t.Context(), pod, &pod.Spec.Containers[0], 0, "10.0.0.1", mounts)
	if err != nil {
		t.Fatalf("container config: %v", err)
	}
	out := map[string]string{}
	for _, m := range cfg.Mounts {
		out[m.ContainerPath] = m.HostPath
	}
	return out
}

func TestSubPathCreatesMissingDirectoriesWithTheVolumesMode(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	pod := subPathPod("mkdir", emptyDir(), v1.VolumeMount{Name: "data", MountPath: "/deep", SubPath: "a/b/c"})
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cleanSubPathsAtEnd(t, h, pod)
	// The umask (022 by default) would otherwise make them 0755.
	host := hostMountsOf(t, h, pod, mounts)["/deep"]
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		fi, err := os.Lstat(filepath.Join(mounts["data"], d))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
			t.Errorf("%s in the volume: %v %v, want a directory with mode 0777 as the emptyDir", d, fi, err)
		}
	}
	if err := os.WriteFile(filepath.Join(host, "seen"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mounts["data"], "a/b/c/seen")); err != nil {
		t.Errorf("a file written through the mount is not in the volume: %v", err)
	}
}

func TestSubPathFollowsSymlinksThatStayInTheVolume(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	// As a configMap volume lays its keys out: key -> ..data/key.
	pod := subPathPod("cm", emptyDir(), v1.VolumeMount{Name: "data", MountPath: "/etc/app.conf", SubPath: "app.conf"})
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cleanSubPathsAtEnd(t, h, pod)
	dir := mounts["data"]
	if err := os.MkdirAll(filepath.Join(dir, "..2026"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "..2026", "app.conf"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"..data": "..2026", "app.conf": "..data/app.conf"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	host := hostMountsOf(t, h, pod, mounts)["/etc/app.conf"]
	if b, err := os.ReadFile(host); err != nil || string(b) != "v1" {
		t.Errorf("the subPath shows %q, %v; want the key's content v1", b, err)
	}
}

func TestSubPathSwappedForASymlinkAfterTheCheckStillShowsTheVolume(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	pod := subPathPod("race", emptyDir(), v1.VolumeMount{Name: "data", MountPath: "/shared", SubPath: "shared"})
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cleanSubPathsAtEnd(t, h, pod)
	dir := mounts["data"]
	if err := os.MkdirAll(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared", "marker"), []byte("volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	host := hostMountsOf(t, h, pod, mounts)["/shared"]

	// Another container of the pod swaps the checked directory for a
	// symlink to the host's /etc before the runtime mounts the path.
	if err := os.Rename(filepath.Join(dir, "shared"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "shared")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(host, "marker")); err != nil || string(b) != "volume" {
		t.Errorf("after the swap the mount shows marker %q, %v; want the volume's", b, err)
	}
	if _, err := os.Stat(filepath.Join(host, "passwd")); err == nil {
		t.Errorf("after the swap the mount shows the host's /etc")
	}

	// A swap between resolving the subPath and opening it is refused.
	if _, err := openBeneath(dir, "shared", "shared"); err == nil || !strings.Contains(err.Error(), "unexpected symlink") {
		t.Errorf("opening through the swapped symlink: %v, want it refused", err)
	}
	if _, err := openBeneath(dir, "shared/passwd", "shared/passwd"); err == nil {
		t.Errorf("opening below the swapped symlink succeeded")
	}
}

func TestSubPathRestartReplacesItsMountAndCleanupKeepsTheVolumesFiles(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "keep"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(hostDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "sub", "keep"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := subPathPod("clean", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}},
		v1.VolumeMount{Name: "data", MountPath: "/sub", SubPath: "sub"},
		v1.VolumeMount{Name: "data", MountPath: "/keep", SubPath: "keep"})
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cleanSubPathsAtEnd(t, h, pod)
	subpaths := filepath.Join(h.volumes.PodDir(pod.UID), "volume-subpaths")
	for range 3 { // the container's first start and two restarts
		hostMountsOf(t, h, pod, mounts)
	}
	if got := mountsUnder(t, subpaths); len(got) != 2 {
		t.Errorf("after three starts the pod has subPath mounts %v, want one per volumeMount", got)
	}

	if err := h.kl.cleanupPodFiles(pod.UID, &runtimePod{}); err != nil {
		t.Fatalf("clean up the pod's files: %v", err)
	}
	if got := mountsUnder(t, subpaths); len(got) != 0 {
		t.Errorf("left mounted after cleanup: %v", got)
	}
	if _, err := os.Stat(h.volumes.PodDir(pod.UID)); err == nil {
		t.Errorf("the pod's directory is left")
	}
	for _, f := range []string{"keep", "sub/keep"} {
		if _, err := os.Stat(filepath.Join(hostDir, f)); err != nil {
			t.Errorf("cleanup deleted the volume's %s: %v", f, err)
		}
	}
}
