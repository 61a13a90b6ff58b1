// Package volume makes a pod's volumes exist on the host, under the
// kubelet's root dir, so that they can be handed to the runtime as bind
// mounts: emptyDir (disk or tmpfs), hostPath, configMap, secret, downwardAPI
// and projected.
package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Mounter mounts and unmounts tmpfs; the real one uses mount(2).
type Mounter interface {
	MountTmpfs(target string, sizeBytes int64) error
	Unmount(target string) error
	IsMountPoint(path string) (bool, error)
}

// Source fetches the API objects that configMap and secret volumes show.
type Source interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// TokenSource issues service-account tokens bound to a pod (TokenRequest);
// a Source that is one serves projected serviceAccountToken volumes.
type TokenSource interface {
	Token(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (string, error)
}

// PodForgetter is a Source that keeps something per pod (tokens), to drop
// once the pod's volumes are gone.
type PodForgetter interface {
	ForgetPod(uid types.UID)
}

// ErrNotFound is returned by a Source for a missing object.
var ErrNotFound = errors.New("not found")

// Manager sets volumes up under Root/pods/<uid>/volumes.
type Manager struct {
	Root    string
	Mounter Mounter
	Source  Source
	// Allocatable is the node's allocatable resources: what a downward API
	// limit shows for a container without one. Nil means none known.
	Allocatable func() v1.ResourceList
}

// Mounted maps a pod volume's name to its path on the host.
type Mounted map[string]string

// PodDir is where a pod's volumes live.
func (m *Manager) PodDir(uid types.UID) string { return filepath.Join(m.Root, "pods", string(uid)) }

// SetUp creates or refreshes every volume of pod. It is idempotent: each
// sync calls it, which is also how configMap and secret changes reach pods.
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod) (Mounted, error) {
	out := Mounted{}
	for _, vol := range pod.Spec.Volumes {
		path, err := m.setUpOne(ctx, pod, vol)
		if err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		}
		out[vol.Name] = path
	}
	return out, nil
}

func (m *Manager) volDir(pod *v1.Pod, plugin, name string) string {
	return filepath.Join(m.PodDir(pod.UID), "volumes", plugin, name)
}

func (m *Manager) setUpOne(ctx context.Context, pod *v1.Pod, vol v1.Volume) (string, error) {
	switch {
	case vol.HostPath != nil:
		return vol.HostPath.Path, checkHostPath(vol.HostPath)
	case vol.EmptyDir != nil:
		dir := m.volDir(pod, "kubernetes.io~empty-dir", vol.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", fmt.Errorf("create emptyDir: %w", err)
		}
		if vol.EmptyDir.Medium == v1.StorageMediumMemory {
			var size int64
			if vol.EmptyDir.SizeLimit != nil {
				size = vol.EmptyDir.SizeLimit.Value()
			}
			if err := m.ensureTmpfs(dir, size); err != nil {
				return "", err
			}
		}
		// World-writable like upstream: containers may run as any user.
		return dir, os.Chmod(dir, 0o777)
	case vol.ConfigMap != nil:
		files, err := m.configMapFiles(ctx, pod.Namespace, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.DefaultMode, vol.ConfigMap.Optional)
		if err != nil {
			return "", err
		}
		dir := m.volDir(pod, "kubernetes.io~configmap", vol.Name)
		return dir, writeAtomic(dir, files)
	case vol.Secret != nil:
		files, err := m.secretFiles(ctx, pod.Namespace, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.DefaultMode, vol.Secret.Optional)
		if err != nil {
			return "", err
		}
		dir := m.volDir(pod, "kubernetes.io~secret", vol.Name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("create secret dir: %w", err)
		}
		// Secrets never touch the disk.
		if err := m.ensureTmpfs(dir, 0); err != nil {
			return "", err
		}
		return dir, writeAtomic(dir, files)
	case vol.DownwardAPI != nil:
		files, err := downwardFiles(pod, vol.DownwardAPI.Items, vol.DownwardAPI.DefaultMode, m.Allocatable)
		if err != nil {
			return "", err
		}
		dir := m.volDir(pod, "kubernetes.io~downward-api", vol.Name)
		return dir, writeAtomic(dir, files)
	case vol.Projected != nil:
		files, err := m.projectedFiles(ctx, pod, vol.Projected)
		if err != nil {
			return "", err
		}
		dir := m.volDir(pod, "kubernetes.io~projected", vol.Name)
		return dir, writeAtomic(dir, files)
	}
	return "", fmt.Errorf("unsupported volume type")
}

func (m *Manager) ensureTmpfs(dir string, size int64) error {
	if m.Mounter == nil {
		return nil
	}
	mounted, err := m.Mounter.IsMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		return nil
	}
	if err := m.Mounter.MountTmpfs(dir, size); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// TearDown unmounts and removes everything the pod had under the root dir.
func (m *Manager) TearDown(uid types.UID) error {
	dir := m.PodDir(uid)
	// The subPath bind mounts go first, one by one: removing the pod's
	// directory recursively across one would delete the volume's files.
	if err := cleanSubPaths(dir); err != nil {
		return err
	}
	if m.Mounter != nil {
		volumes := filepath.Join(dir, "volumes")
		plugins, _ := os.ReadDir(volumes)
		for _, p := range plugins {
			vols, _ := os.ReadDir(filepath.Join(volumes, p.Name()))
			for _, v := range vols {
				path := filepath.Join(volumes, p.Name(), v.Name())
				if mounted, err := m.Mounter.IsMountPoint(path); err == nil && mounted {
					if err := m.Mounter.Unmount(path); err != nil {
						return fmt.Errorf("unmount %s: %w", path, err)
					}
				}
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pod dir: %w", err)
	}
	if f, ok := m.Source.(PodForgetter); ok {
		f.ForgetPod(uid)
	}
	return nil
}

// PodUIDsOnDisk lists the pods that have a directory under the root dir.
func (m *Manager) PodUIDsOnDisk() []types.UID {
	entries, _ := os.ReadDir(filepath.Join(m.Root, "pods"))
	out := make([]types.UID, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, types.UID(e.Name()))
		}
	}
	return out
}

func checkHostPath(hp *v1.HostPathVolumeSource) error {
	t := v1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	fi, statErr := os.Stat(hp.Path)
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if errors.Is(statErr, fs.ErrNotExist) {
			return os.MkdirAll(hp.Path, 0o755)
		}
		if statErr == nil && !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", hp.Path)
		}
		return statErr
	case v1.HostPathFileOrCreate:
		if errors.Is(statErr, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if statErr == nil && fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is a directory", hp.Path)
		}
		return statErr
	}
	if statErr != nil {
		return fmt.Errorf("hostPath type check failed: %s does not exist", hp.Path)
	}
	ok := map[v1.HostPathType]bool{
		v1.HostPathDirectory: fi.IsDir(),
		v1.HostPathFile:      fi.Mode().IsRegular(),
		v1.HostPathSocket:    fi.Mode()&fs.ModeSocket != 0,
		v1.HostPathCharDev:   fi.Mode()&fs.ModeCharDevice != 0,
		v1.HostPathBlockDev:  fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0,
	}[t]
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not a %s", hp.Path, t)
	}
	return nil
}

// file is one file of a configMap, secret, downwardAPI or projected volume.
type file struct {
	data []byte
	mode os.FileMode
}

func modeOr(m *int32, def int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return os.FileMode(def)
}

// project lays out data as the volume's items ask; missingKey words the
// error for an item whose key the object lacks, as upstream's MakePayload
// for its kind.
func project(data map[string][]byte, items []v1.KeyToPath, defaultMode *int32, optional bool, missingKey string) (map[string]file, error) {
	mode := modeOr(defaultMode, v1.ConfigMapVolumeSourceDefaultMode)
	out := map[string]file{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = file{v, mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s", missingKey, it.Key)
		}
		out[it.Path] = file{v, modeOr(it.Mode, int32(mode))}
	}
	return out, nil
}

func (m *Manager) configMapFiles(ctx context.Context, ns, name string, items []v1.KeyToPath, mode *int32, optional *bool) (map[string]file, error) {
	opt := optional != nil && *optional
	cm, err := m.Source.GetConfigMap(ctx, ns, name)
	if errors.Is(err, ErrNotFound) && opt {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, sourceError("configmap", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return project(data, items, mode, opt, "configmap references non-existent config key")
}

func (m *Manager) secretFiles(ctx context.Context, ns, name string, items []v1.KeyToPath, mode *int32, optional *bool) (map[string]file, error) {
	opt := optional != nil && *optional
	s, err := m.Source.GetSecret(ctx, ns, name)
	if errors.Is(err, ErrNotFound) && opt {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, sourceError("secret", name, err)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return project(data, items, mode, opt, "references non-existent secret key")
}

func downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode *int32, allocatable func() v1.ResourceList) (map[string]file, error) {
	mode := modeOr(defaultMode, v1.DownwardAPIVolumeSourceDefaultMode)
	out := map[string]file{}
	for _, it := range items {
		var val string
		switch {
		case it.FieldRef != nil:
			v, err := FieldValue(pod, it.FieldRef.FieldPath)
			if err != nil {
				return nil, err
			}
			val = v
		case it.ResourceFieldRef != nil:
			v, err := ResourceValue(pod, it.ResourceFieldRef, allocatable)
			if err != nil {
				return nil, err
			}
			val = v
		default:
			continue
		}
		out[it.Path] = file{[]byte(val), modeOr(it.Mode, int32(mode))}
	}
	return out, nil
}

func (m *Manager) projectedFiles(ctx context.Context, pod *v1.Pod, p *v1.ProjectedVolumeSource) (map[string]file, error) {
	out := map[string]file{}
	merge := func(files map[string]file, err error) error {
		if err != nil {
			return err
		}
		for k, v := range files {
			out[k] = v
		}
		return nil
	}
	mode := p.DefaultMode
	if mode == nil {
		d := v1.ProjectedVolumeSourceDefaultMode
		mode = &d
	}
	for _, src := range p.Sources {
		var err error
		switch {
		case src.ConfigMap != nil:
			err = merge(m.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, mode, src.ConfigMap.Optional))
		case src.Secret != nil:
			err = merge(m.secretFiles(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, mode, src.Secret.Optional))
		case src.DownwardAPI != nil:
			err = merge(downwardFiles(pod, src.DownwardAPI.Items, mode, m.Allocatable))
		case src.ServiceAccountToken != nil:
			tokens, ok := m.Source.(TokenSource)
			if !ok {
				err = fmt.Errorf("no token source for serviceAccountToken %q", src.ServiceAccountToken.Path)
				break
			}
			exp := int64(3600)
			if src.ServiceAccountToken.ExpirationSeconds != nil {
				exp = *src.ServiceAccountToken.ExpirationSeconds
			}
			var tok string
			tok, err = tokens.Token(ctx, pod, src.ServiceAccountToken.Audience, exp)
			if err == nil {
				out[src.ServiceAccountToken.Path] = file{[]byte(tok), os.FileMode(*mode)}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FieldValue resolves a downward API field path of pod.
func FieldValue(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIPs":
		ips := make([]string, 0, len(pod.Status.HostIPs))
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.podIPs":
		ips := make([]string, 0, len(pod.Status.PodIPs))
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		if strings.HasPrefix(path, prefix) && strings.HasSuffix(path, "']") {
			k := strings.TrimSuffix(strings.TrimPrefix(path, prefix), "']")
			if strings.HasPrefix(prefix, "metadata.labels") {
				return pod.Labels[k], nil
			}
			return pod.Annotations[k], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// ResourceValue resolves a resourceFieldRef. A limit the container does not
// set is the node's allocatable amount (upstream's rule), a missing request 0.
// allocatable (nil: none known) is asked only for such a limit: it reads the host.
func ResourceValue(pod *v1.Pod, ref *v1.ResourceFieldSelector, allocatable func() v1.ResourceList) (string, error) {
	var c *v1.Container
	if ref.ContainerName == "" && len(pod.Spec.Containers) > 0 {
		c = &pod.Spec.Containers[0]
	}
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == ref.ContainerName {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("no container %q", ref.ContainerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, ok := list[v1.ResourceName(name)]
	if !ok && kind == "limits" && allocatable != nil {
		q, ok = allocatable()[v1.ResourceName(name)]
	}
	if !ok {
		return "0", nil
	}
	divisor := ref.Divisor
	if name == "cpu" {
		d := divisor.MilliValue()
		if d <= 0 {
			d = 1000
		}
		return strconv.FormatInt((q.MilliValue()+d-1)/d, 10), nil
	}
	d := divisor.Value()
	if d <= 0 {
		d = 1
	}
	return strconv.FormatInt((q.Value()+d-1)/d, 10), nil
}

// formatMap is a labels or annotations file: key="value" lines in key
// order, without a newline after the last, as upstream's FormatMap.
func formatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}

// sourceError names the object a volume could not read, in upstream's
// words for a missing one (`secret "x" not found`).
func sourceError(kind, name string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%s %q %w", kind, name, err)
	}
	return fmt.Errorf("%s %q: %w", kind, name, err)
}
