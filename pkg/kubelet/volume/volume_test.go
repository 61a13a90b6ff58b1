package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeSource struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (f *fakeSource) GetConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.cms[name]; ok {
		return cm, nil
	}
	return nil, ErrNotFound
}

func (f *fakeSource) GetSecret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, ErrNotFound
}

type fakeMounter struct{ mounted map[string]int64 }

func (f *fakeMounter) MountTmpfs(target string, size int64) error {
	f.mounted[target] = size
	return nil
}
func (f *fakeMounter) Unmount(target string) error         { delete(f.mounted, target); return nil }
func (f *fakeMounter) IsMountPoint(p string) (bool, error) { _, ok := f.mounted[p]; return ok, nil }

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVolumesShowTheirSourcesAndFollowUpdates(t *testing.T) {
	src := &fakeSource{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"a": "1", "b": "2"}}},
		secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"password": []byte("hunter2")}}},
	}
	mounter := &fakeMounter{mounted: map[string]int64{}}
	m := &Manager{Root: t.TempDir(), Mounter: mounter, Source: src}
	mode := int32(0o400)
	hostDir := filepath.Join(t.TempDir(), "made")
	dirOrCreate := v1.HostPathDirectoryOrCreate
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"tier": `b "c"`, "app": "x"}},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "a", Path: "dir/a.txt"}}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: &mode}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
			{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			}}}},
		}},
	}
	got, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if s := read(t, filepath.Join(got["cfg"], "dir/a.txt")); s != "1" {
		t.Fatalf("configmap item = %q", s)
	}
	if _, err := os.Stat(filepath.Join(got["cfg"], "b")); err == nil {
		t.Fatal("configmap key b is shown although items select only a")
	}
	if s := read(t, filepath.Join(got["sec"], "password")); s != "hunter2" {
		t.Fatalf("secret = %q", s)
	}
	if fi, _ := os.Stat(filepath.Join(got["sec"], "password")); fi.Mode().Perm() != 0o400 {
		t.Fatalf("secret mode = %v, want 0400", fi.Mode().Perm())
	}
	if _, ok := mounter.mounted[got["mem"]]; !ok {
		t.Fatal("medium Memory emptyDir is not a tmpfs")
	}
	if _, ok := mounter.mounted[got["disk"]]; ok {
		t.Fatal("disk emptyDir was mounted as tmpfs")
	}
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() || got["host"] != hostDir {
		t.Fatalf("hostPath DirectoryOrCreate: %v", err)
	}
	if s := read(t, filepath.Join(got["info"], "name")); s != "p" {
		t.Fatalf("downward name = %q", s)
	}
	// As upstream's FormatMap: sorted key="value" lines, no newline after
	// the last (there was one).
	if s := read(t, filepath.Join(got["info"], "labels")); s != "app=\"x\"\ntier=\"b \\\"c\\\"\"" {
		t.Fatalf("downward labels = %q", s)
	}

	// The configMap changes: the next sync shows the new value.
	src.cms["cfg"] = &v1.ConfigMap{Data: map[string]string{"a": "changed"}}
	if _, err := m.SetUp(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if s := read(t, filepath.Join(got["cfg"], "dir/a.txt")); s != "changed" {
		t.Fatalf("after update configmap item = %q", s)
	}

	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if len(mounter.mounted) != 0 {
		t.Fatalf("still mounted after teardown: %v", mounter.mounted)
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Fatalf("pod dir survives teardown: %v", err)
	}
}

func TestSetUpFailures(t *testing.T) {
	file := v1.HostPathFile
	optional := true
	tests := []struct {
		name    string
		vol     v1.VolumeSource
		wantErr string // the FailedMount event's message, as upstream words it
	}{
		{"missing configmap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			`MountVolume.SetUp failed for volume "v" : configmap "nope" not found`},
		{"missing optional configmap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: &optional}}, ""},
		{"missing secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope"}},
			`MountVolume.SetUp failed for volume "v" : secret "nope" not found`},
		{"configmap item whose key is missing", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"},
			Items: []v1.KeyToPath{{Key: "missing", Path: "x"}}}},
			`MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: missing`},
		{"optional configmap item whose key is missing", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"},
			Items: []v1.KeyToPath{{Key: "missing", Path: "x"}}, Optional: &optional}}, ""},
		{"secret item whose key is missing", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s",
			Items: []v1.KeyToPath{{Key: "missing", Path: "x"}}}},
			`MountVolume.SetUp failed for volume "v" : references non-existent secret key: missing`},
		{"projected configmap item whose key is missing", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
			ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "missing", Path: "x"}}}}}}},
			`MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: missing`},
		{"hostPath File that does not exist", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/does/not/exist", Type: &file}},
			`MountVolume.SetUp failed for volume "v" : hostPath type check failed: /does/not/exist does not exist`},
		{"hostPath File that is a directory", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/", Type: &file}},
			`MountVolume.SetUp failed for volume "v" : hostPath type check failed: / is not a File`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{
				cms:     map[string]*v1.ConfigMap{"cm": {Data: map[string]string{"a": "A"}}},
				secrets: map[string]*v1.Secret{"s": {Data: map[string][]byte{"a": []byte("A")}}},
			}
			m := &Manager{Root: t.TempDir(), Mounter: &fakeMounter{mounted: map[string]int64{}}, Source: src}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: tc.vol}}}}
			_, err := m.SetUp(context.Background(), pod)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Fatalf("err = %q, want %q", got, tc.wantErr)
			}
		})
	}
}

type tokenSource struct {
	fakeSource
	calls int
}

func (s *tokenSource) Token(_ context.Context, pod *v1.Pod, audience string, exp int64) (string, error) {
	s.calls++
	return "token-for-" + pod.Name + "-" + audience, nil
}

func TestProjectedVolumeCombinesSources(t *testing.T) {
	src := &tokenSource{fakeSource: fakeSource{cms: map[string]*v1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}}}}
	m := &Manager{Root: t.TempDir(), Source: src}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}}}},
	}
	got, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := got["kube-api-access"]
	for file, want := range map[string]string{"token": "token-for-p-api", "ca.crt": "CA", "namespace": "ns"} {
		if s := read(t, filepath.Join(dir, file)); s != want {
			t.Errorf("%s = %q, want %q", file, s, want)
		}
	}
}

func TestDownwardVolumeShowsNodeAllocatableForAMissingLimit(t *testing.T) {
	m := &Manager{Root: t.TempDir(), Source: &fakeSource{}, Allocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourceCPU: resource.MustParse("2")}
	}}
	item := func(path, res string) v1.DownwardAPIVolumeFile {
		return v1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: res}}
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}}}},
			Volumes: []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				item("mem_limit", "limits.memory"), item("cpu_limit", "limits.cpu"),
			}}}}},
		},
	}
	got, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"mem_limit": "8589934592", "cpu_limit": "1"} {
		if s := read(t, filepath.Join(got["info"], file)); s != want {
			t.Errorf("%s = %q, want %q", file, s, want)
		}
	}
}

func TestTearDownLeavesAPodDirThatStillHoldsSubPathMounts(t *testing.T) {
	m := &Manager{Root: t.TempDir()}
	// What a subPath bind mount left mounted would show: the volume's files.
	shown := filepath.Join(m.PodDir("uid-1"), "volume-subpaths", "data", "main", "0")
	if err := os.MkdirAll(shown, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shown, "precious"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown("uid-1"); err == nil {
		t.Errorf("TearDown removed a pod dir that still holds subPath mounts")
	}
	if _, err := os.Stat(filepath.Join(shown, "precious")); err != nil {
		t.Errorf("TearDown deleted files through a subPath mount: %v", err)
	}
}
