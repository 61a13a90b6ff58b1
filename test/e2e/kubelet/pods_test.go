//go:build e2e

package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/cri"
	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

const (
	busybox = "kube-lite.local/busybox:1.35"
	testapp = "kube-lite.local/testapp:1.0"
	// waitLimit bounds every wait so that a broken kubelet fails a test
	// instead of hanging it; nothing asserts how fast things happen.
	waitLimit = 2 * time.Minute
)

func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	_, err := env.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return name
}

func createPod(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	pod.Spec.NodeName = nodeName
	created, err := env.cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() {
		// One second rather than a forced delete: as upstream, the kubelet
		// gives a force-deleted pod its whole grace period (30s for most
		// test pods, whose PID 1 ignores SIGTERM), which would keep the
		// suite's teardown waiting.
		one := int64(1)
		_ = env.cs.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &one})
	})
	return created
}

// waitPod polls the pod until cond holds.
func waitPod(t *testing.T, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		p, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s never became %s; last status: %+v", ns, name, what, last.Status)
	return nil
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// testappProbe probes one of testapp's health paths every second; the
// tests flip what the path answers and watch the kubelet react.
func testappProbe(path string, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: e2eutil.IntOrString(8080)}},
		PeriodSeconds: 1, FailureThreshold: failureThreshold,
	}
}

func simplePod(name, image string, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: image, Command: command, ImagePullPolicy: corev1.PullIfNotPresent,
		}}},
	}
}

func logs(t *testing.T, ns, pod, container string) string {
	t.Helper()
	out, err := kubeletGet(fmt.Sprintf("/containerLogs/%s/%s/%s", ns, pod, container))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitLogs is the container's log once it has any, else (after waitLimit)
// empty.
func waitLogs(t *testing.T, ns, pod, container string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out = logs(t, ns, pod, container); out != "" {
			break
		}
	}
	return out
}

func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestPodRunsWithAnIPInThePodCIDR(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("web", testapp)
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	pod.Spec.Containers[0].ReadinessProbe = testappProbe("/readyz", 1)
	createPod(t, ns, pod)
	p := waitPod(t, ns, "web", "Running and Ready", func(p *corev1.Pod) bool { return running(p) && e2eutil.PodReady(p) })
	_, cidr, _ := net.ParseCIDR(podCIDR)
	if ip := net.ParseIP(p.Status.PodIP); ip == nil || !cidr.Contains(ip) {
		t.Fatalf("pod IP %q is not in %s", p.Status.PodIP, podCIDR)
	}
	if p.Status.HostIP == "" || p.Status.StartTime == nil || !strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Fatalf("status lacks hostIP/startTime/containerID: %+v", p.Status)
	}
	code, body, err := httpGet("http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/")
	if err != nil || code != 200 {
		t.Fatalf("GET the pod: %d %v", code, err)
	}
	if !strings.Contains(body, "ip="+p.Status.PodIP) || !strings.Contains(body, "hostname=web") {
		t.Fatalf("the pod says %q, want its IP %s and hostname web", body, p.Status.PodIP)
	}
}

func TestEnvConfigMapSecretAndEmptyDirAreVisible(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := env.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"color": "blue", "file.txt": "from-configmap"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sec"}, Data: map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := simplePod("vis", busybox, "sh", "-c",
		`echo "literal=$LITERAL color=$COLOR password=$PASSWORD name=$POD_NAME"; `+
			`echo "cm=$(cat /cfg/file.txt) sec=$(cat /sec/password)"; `+
			`echo scratch > /scratch/f && echo "emptydir=$(cat /scratch/f)"; `+
			// The pod's loopback is up (IFF_UP|IFF_LOOPBACK).
			`echo "lo=$(cat /sys/class/net/lo/flags)"`)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{
		{Name: "LITERAL", Value: "plain"},
		{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "color"}}},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}, {Name: "scratch", MountPath: "/scratch"}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	createPod(t, ns, pod)
	// restartPolicy Never and exit 0: Succeeded.
	p := waitPod(t, ns, "vis", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("container state = %+v, want terminated Completed", p.Status.ContainerStatuses[0].State)
	}
	out := logs(t, ns, "vis", "main")
	for _, want := range []string{"literal=plain color=blue password=s3cret name=vis", "cm=from-configmap sec=s3cret", "emptydir=scratch", "lo=0x9"} {
		if !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}
}

// TestHostsFileAndHostnameAreThePods: the container's /etc/hosts is the
// kubelet-managed one (the pod's FQDN at its IP, then its hostAliases) and
// setHostnameAsFQDN makes the FQDN its hostname; it was the node's hosts
// file and the short name.
func TestHostsFileAndHostnameAreThePods(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("hosts", busybox, "sh", "-c", "cat /etc/hosts; echo hostname=$(hostname)")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	fqdn := true
	// Short names: the FQDN must fit the kernel's 64 characters.
	pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = "w", "s", &fqdn
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	createPod(t, ns, pod)
	p := waitPod(t, ns, "hosts", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	name := "w.s." + ns + ".svc.cluster.local"
	out := logs(t, ns, "hosts", "main")
	for _, want := range []string{"# Kubernetes-managed hosts file.\n", p.Status.PodIP + "\t" + name + "\tw\n",
		"# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n", "hostname=" + name + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}
}

// TestArgsAloneAreTheCommand: the busybox image, like Docker Hub's, has no
// entrypoint, so args without a command run as the whole command line
// (what `kubectl run NAME --image=busybox -- sh -c '...'` creates).
func TestArgsAloneAreTheCommand(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("args", busybox)
	pod.Spec.Containers[0].Args = []string{"sh", "-c", "echo from-args"}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	createPod(t, ns, pod)
	waitPod(t, ns, "args", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if out := logs(t, ns, "args", "main"); !strings.Contains(out, "from-args") {
		t.Fatalf("container output %q, want from-args", out)
	}
}

func TestInitContainersRunInOrder(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("init", busybox, "sh", "-c", "cat /work/order; sleep 3600")
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "first", Image: busybox, Command: []string{"sh", "-c", "sleep 1; echo first >> /work/order"}, VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}},
		{Name: "second", Image: busybox, Command: []string{"sh", "-c", "echo second >> /work/order"}, VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	createPod(t, ns, pod)
	p := waitPod(t, ns, "init", "Running", running)
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
			t.Fatalf("init container %s: %+v", s.Name, s.State)
		}
	}
	if out := waitLogs(t, ns, "init", "main"); out != "first\nsecond\n" {
		t.Fatalf("init containers ran as %q, want first then second", out)
	}
}

// A sidecar (init container with restartPolicy Always) runs beside the app
// container, and is stopped once it ends, so that the pod ends Succeeded.
func TestSidecarRunsBesideTheAppContainerAndStopsAfterIt(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := simplePod("sidecar", busybox, "sh", "-c", "until [ -f /work/ready ]; do sleep 0.1; done")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: busybox, RestartPolicy: &always,
		Command:      []string{"sh", "-c", "trap 'exit 0' TERM; touch /work/ready; while true; do sleep 0.1; done"},
		VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	createPod(t, ns, pod)
	p := waitPod(t, ns, "sidecar", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	sc := p.Status.InitContainerStatuses[0]
	if sc.State.Terminated == nil || sc.RestartCount != 0 {
		t.Fatalf("sidecar %+v, want terminated once the app container ended", sc)
	}
	if main := p.Status.ContainerStatuses[0]; main.State.Terminated == nil || main.State.Terminated.Reason != "Completed" {
		t.Fatalf("main %+v", main.State)
	}
}

func TestCrashingContainerBacksOffWithGrowingDelays(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	createPod(t, ns, simplePod("crash", busybox, "sh", "-c", "exit 3"))
	sawBackOff := false
	starts := map[int32]time.Time{}   // attempt -> startedAt
	finishes := map[int32]time.Time{} // attempt -> finishedAt
	waitPod(t, ns, "crash", "restarted three times", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		s := p.Status.ContainerStatuses[0]
		if w := s.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		if last := s.LastTerminationState.Terminated; last != nil && s.RestartCount > 0 {
			attempt := s.RestartCount - 1
			if s.State.Waiting != nil {
				attempt = s.RestartCount
			}
			if last.ExitCode != 3 {
				t.Errorf("last exit code %d, want 3", last.ExitCode)
			}
			starts[attempt], finishes[attempt] = last.StartedAt.Time, last.FinishedAt.Time
		}
		if r := s.State.Running; r != nil {
			starts[s.RestartCount] = r.StartedAt.Time
		}
		if t := s.State.Terminated; t != nil {
			starts[s.RestartCount], finishes[s.RestartCount] = t.StartedAt.Time, t.FinishedAt.Time
		}
		return s.RestartCount >= 3 && len(finishes) >= 3 && !starts[3].IsZero()
	})
	if !sawBackOff {
		t.Fatal("never saw CrashLoopBackOff")
	}
	// The wait before restart n is start(n) - finish(n-1); with a 2s
	// initial back-off doubling, the third wait is clearly longer than the first.
	gap := func(n int32) time.Duration { return starts[n].Sub(finishes[n-1]) }
	if !(gap(3) > gap(1)) {
		t.Fatalf("restart delays did not grow: %s, %s, %s", gap(1), gap(2), gap(3))
	}
	t.Logf("restart delays: %s, %s, %s", gap(1), gap(2), gap(3))
}

func TestMissingImageGoesToImagePullBackOff(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	createPod(t, ns, simplePod("noimage", "kube-lite.local/does-not-exist:1"))
	seen := map[string]bool{}
	p := waitPod(t, ns, "noimage", "ImagePullBackOff", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		seen[p.Status.ContainerStatuses[0].State.Waiting.Reason] = true
		return seen["ImagePullBackOff"]
	})
	if p.Status.Phase != corev1.PodPending {
		t.Fatalf("phase = %s, want Pending", p.Status.Phase)
	}
	// `kubectl logs` says why there is nothing to read, as upstream does.
	err := env.cs.CoreV1().Pods(ns).GetLogs("noimage", &corev1.PodLogOptions{}).Do(context.Background()).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `container "main" in pod "noimage" is waiting to start: `) {
		t.Fatalf("logs of a waiting container: %v, want 400 saying it is waiting to start", err)
	}
}

func TestFailingLivenessProbeRestartsTheContainer(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("live", testapp)
	pod.Spec.Containers[0].LivenessProbe = testappProbe("/healthz", 2)
	createPod(t, ns, pod)
	p := waitPod(t, ns, "live", "Running", func(p *corev1.Pod) bool { return running(p) && e2eutil.PodReady(p) })
	first := p.Status.ContainerStatuses[0].ContainerID
	// Ready without a readiness probe is only started: testapp may not
	// listen yet.
	var code int
	var err error
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if code, _, err = httpGet("http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/toggle-healthy"); err == nil {
			break
		}
	}
	if err != nil || code != 200 {
		t.Fatalf("toggle health: %d %v", code, err)
	}
	p = waitPod(t, ns, "live", "restarted", func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses[0]
		return s.RestartCount >= 1 && s.State.Running != nil && s.ContainerID != first
	})
	if p.Status.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1 (the new container is healthy)", p.Status.ContainerStatuses[0].RestartCount)
	}
}

func TestReadinessProbeFlipsReady(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("ready", testapp)
	pod.Spec.Containers[0].ReadinessProbe = testappProbe("/readyz", 1)
	createPod(t, ns, pod)
	p := waitPod(t, ns, "ready", "Ready", e2eutil.PodReady)
	toggle := "http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/toggle-ready"
	if _, _, err := httpGet(toggle); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, ns, "ready", "not Ready", func(p *corev1.Pod) bool { return !e2eutil.PodReady(p) })
	if !running(p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("an unready pod must keep running unrestarted: %+v", p.Status)
	}
	if _, _, err := httpGet(toggle); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "ready", "Ready again", e2eutil.PodReady)
}

func TestGracefulDeletionHonoursSIGTERMAndKillsIgnorers(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	hostDir := t.TempDir()
	mkPod := func(name, script string, grace int64) *corev1.Pod {
		p := simplePod(name, busybox, "sh", "-c", script)
		p.Spec.TerminationGracePeriodSeconds = &grace
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}}
		return p
	}
	createPod(t, ns, mkPod("trapper", `trap 'echo terminated > /host/marker; exit 0' TERM; echo up > /host/up-trapper; while true; do sleep 0.1; done`, 30))
	// PID 1 without a handler ignores SIGTERM: only SIGKILL ends it.
	createPod(t, ns, mkPod("ignorer", `echo up > /host/up-ignorer; while true; do sleep 0.1; done`, 3))
	waitPod(t, ns, "trapper", "Running", running)
	waitPod(t, ns, "ignorer", "Running", running)
	for _, f := range []string{"up-trapper", "up-ignorer"} {
		for deadline := time.Now().Add(waitLimit); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(hostDir, f)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never started its loop", f)
			}
		}
	}

	ctx := context.Background()
	// What a user watching the pods sees last of each before it goes.
	w, err := env.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	finals := make(chan *corev1.Pod, 2)
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted {
				finals <- p
			}
		}
	}()
	begin := time.Now()
	for _, name := range []string{"trapper", "ignorer"} {
		if err := env.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name string) time.Duration {
		for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			_, err := env.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return time.Since(begin)
			}
		}
		t.Fatalf("pod %s was never deleted", name)
		return 0
	}
	trapperGone := gone("trapper")
	ignorerGone := gone("ignorer")
	marker, err := os.ReadFile(filepath.Join(hostDir, "marker"))
	if err != nil || strings.TrimSpace(string(marker)) != "terminated" {
		t.Fatalf("the SIGTERM handler left no marker: %q %v", marker, err)
	}
	// The trapper exits on SIGTERM well within its 30s; the ignorer lives
	// out its 3s grace period before SIGKILL.
	if trapperGone >= 30*time.Second {
		t.Fatalf("trapper took %s, its whole grace period", trapperGone)
	}
	if ignorerGone < 3*time.Second {
		t.Fatalf("ignorer was gone after %s, before its 3s grace period", ignorerGone)
	}
	t.Logf("trapper gone after %s, ignorer after %s", trapperGone, ignorerGone)
	// As upstream, each reached a terminal phase with its container's end
	// before the kubelet's final delete: the trapper exited 0 (Succeeded
	// though its restart policy is Always), the ignorer was SIGKILLed.
	want := map[string]struct {
		phase corev1.PodPhase
		exit  int32
	}{"trapper": {corev1.PodSucceeded, 0}, "ignorer": {corev1.PodFailed, 137}}
	for range want {
		var p *corev1.Pod
		select {
		case p = <-finals:
		case <-time.After(waitLimit):
			t.Fatal("no watch event for a deleted pod")
		}
		exp := want[p.Name]
		cs := p.Status.ContainerStatuses
		if p.Status.Phase != exp.phase || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != exp.exit {
			t.Fatalf("pod %s was deleted as %s with containers %+v, want %s with exit code %d", p.Name, p.Status.Phase, cs, exp.phase, exp.exit)
		}
	}
}

// TestDeadSandboxsContainerGetsPreStopAndSIGTERM kills a pod's pause
// process: before the kubelet re-creates the sandbox, the container runs its
// preStop hook and gets SIGTERM (not a bare SIGKILL), and the new sandbox
// runs the init container again, as upstream's does.
func TestDeadSandboxsContainerGetsPreStopAndSIGTERM(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	hostDir := t.TempDir()
	grace := int64(30)
	p := simplePod("sbdies", busybox, "sh", "-c",
		`trap 'echo terminated > /host/term; exit 0' TERM; echo up > /host/up; while true; do sleep 0.1; done`)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo prestop > /host/prestop"}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
	p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}}
	p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:      []string{"sh", "-c", "echo ran >> /host/init"},
		VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}}
	created := createPod(t, ns, p)
	waitPod(t, ns, "sbdies", "Running", running)
	waitFile := func(name, want string) {
		t.Helper()
		for deadline := time.Now().Add(waitLimit); ; time.Sleep(50 * time.Millisecond) {
			b, err := os.ReadFile(filepath.Join(hostDir, name))
			if err == nil && strings.TrimSpace(string(b)) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/host/%s holds %q (%v), want %q", name, b, err, want)
			}
		}
	}
	waitFile("up", "up") // its TERM handler is set

	sock := filepath.Join(env.ctrDir, "containerd.sock")
	rt, err := cri.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(created.UID)}})
	if err != nil || len(sandboxes) != 1 {
		t.Fatalf("sandboxes of the pod: %v %v", sandboxes, err)
	}
	if out, err := e2eutil.Run("ctr", "--address", sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", sandboxes[0].Id); err != nil {
		t.Fatalf("kill the pause process: %v %s", err, out)
	}

	waitFile("prestop", "prestop")
	waitFile("term", "terminated")
	waitFile("init", "ran\nran")
	waitPod(t, ns, "sbdies", "Running again in a new sandbox", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return running(p) && len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil &&
			cs[0].LastTerminationState.Terminated != nil && cs[0].LastTerminationState.Terminated.ExitCode == 0
	})
}

func TestLogsFollowStreams(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	createPod(t, ns, simplePod("talker", busybox, "sh", "-c", "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.3; done"))
	waitPod(t, ns, "talker", "Running", running)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.binDir, "kubectl-lite"), "--kubeconfig", env.adminKC, "-n", ns, "logs", "-f", "talker")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	// Lines keep arriving on the open stream: at least 5 after the first.
	var first int
	for sc.Scan() {
		n, _ := strconv.Atoi(strings.TrimPrefix(sc.Text(), "line "))
		if first == 0 {
			first = n
		}
		if n >= first+5 {
			return
		}
	}
	t.Fatalf("the stream ended: %v; stderr: %s", sc.Err(), stderr.String())
}

// TestKubeletRestartKeepsContainers runs last: it restarts the kubelet.
func TestKubeletRestartKeepsContainers(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	createPod(t, ns, simplePod("steady", busybox, "sleep", "3600"))
	p := waitPod(t, ns, "steady", "Running", running)
	id := p.Status.ContainerStatuses[0].ContainerID

	stopKubelet()
	sock := filepath.Join(env.ctrDir, "containerd.sock")
	if err := startKubelet(sock); err != nil {
		t.Fatal(err)
	}
	// The restarted kubelet proves it synced this pod by serving it from /pods.
	deadline := time.Now().Add(waitLimit)
	for {
		out, err := kubeletGet("/pods")
		if err == nil && strings.Contains(out, `"name":"steady"`) && strings.Contains(out, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted kubelet does not show the pod: %v %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Give it a full resync, then check nothing was recreated.
	time.Sleep(6 * time.Second)
	p, err := env.cs.CoreV1().Pods(ns).Get(context.Background(), "steady", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Status.ContainerStatuses[0]
	if s.ContainerID != id || s.RestartCount != 0 || s.State.Running == nil {
		t.Fatalf("after the kubelet restart: container %s restarts %d state %+v, want %s still running", s.ContainerID, s.RestartCount, s.State, id)
	}
}

func TestHostPortReachesThePod(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	pod := simplePod("hostport", testapp)
	hostPort := int32(20000 + os.Getpid()%10000)
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: hostPort}}
	// Ready once it answers on its own IP, so a refusal below is the hostPort's.
	pod.Spec.Containers[0].ReadinessProbe = testappProbe("/readyz", 1)
	createPod(t, ns, pod)
	p := waitPod(t, ns, "hostport", "Running and Ready", func(p *corev1.Pod) bool { return running(p) && e2eutil.PodReady(p) })
	url := "http://" + net.JoinHostPort(p.Status.HostIP, fmt.Sprint(hostPort)) + "/"
	code, body, err := httpGet(url)
	if err != nil || code != 200 {
		t.Fatalf("GET %s: %d %v", url, code, err)
	}
	if !strings.Contains(body, "ip="+p.Status.PodIP) {
		t.Fatalf("%s answered %q, want the pod (ip=%s)", url, body, p.Status.PodIP)
	}
}
