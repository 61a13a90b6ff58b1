//go:build e2e

package kubelet

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// subPathMounts lists the kubelet's subPath bind mounts of the pod.
func subPathMounts(t *testing.T, uid string) []string {
	t.Helper()
	dir := filepath.Join(env.root, "kubelet", "pods", uid, "volume-subpaths")
	if real, err := filepath.EvalSymlinks(filepath.Dir(filepath.Dir(dir))); err == nil {
		dir = filepath.Join(real, uid, "volume-subpaths")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, fields[4])
		}
	}
	return out
}

func TestSubPathShowsTheVolumesPathAndIsUnmountedWithThePod(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"app.conf": "from-configmap"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	volumes := []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	// The init container fills the volume, and plants a symlink out of it.
	prep := corev1.Container{Name: "prep", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:      []string{"sh", "-c", "mkdir -p /work/data && echo hello > /work/data/greeting && ln -s /etc /work/escape"},
		VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}

	pod := simplePod("sub", busybox, "sh", "-c",
		`echo "conf=$(cat /etc/app.conf) greeting=$(cat /data/greeting)"; echo made > /logs/f && echo "logs=$(cat /logs/f)"`)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Volumes = volumes
	pod.Spec.InitContainers = []corev1.Container{prep}
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "work", MountPath: "/data", SubPath: "data"},
		{Name: "work", MountPath: "/logs", SubPathExpr: "$(POD_NAME)/logs"},
	}
	created := createPod(t, ns, pod)

	escape := simplePod("escape", busybox, "true")
	escape.Spec.Volumes = volumes
	escape.Spec.InitContainers = []corev1.Container{prep}
	escape.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/x", SubPath: "escape"}}
	createPod(t, ns, escape)

	waitPod(t, ns, "sub", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	out := logs(t, ns, "sub", "main")
	if !strings.Contains(out, "conf=from-configmap greeting=hello") || !strings.Contains(out, "logs=made") {
		t.Errorf("container output:\n%s", out)
	}
	if got := subPathMounts(t, string(created.UID)); len(got) != 3 {
		t.Errorf("subPath mounts of the pod: %v, want one per volumeMount", got)
	}

	p := waitPod(t, ns, "escape", "CreateContainerConfigError", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "not within volume path") {
		t.Errorf("the escaping subPath's container waits with %q", msg)
	}

	if err := env.cs.CoreV1().Pods(ns).Delete(ctx, "sub", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(100 * time.Millisecond) {
		_, err := env.cs.CoreV1().Pods(ns).Get(ctx, "sub", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod was never deleted")
		}
	}
	// A terminal pod leaves the API at once (grace period 0): the kubelet
	// cleans up after, so its mounts go some time later.
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(100 * time.Millisecond) {
		got := subPathMounts(t, string(created.UID))
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the pod is gone its subPath mounts are left: %v", got)
		}
	}
}
