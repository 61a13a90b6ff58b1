//go:build e2e

package compose

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// The tests run in this order: the ones that take a component down come
// last and start it again when they end.

func TestDeploymentSpreadsOverNodes(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	if _, err := env.cs.AppsV1().Deployments(ns).Create(ctx, testappDeployment("web", 6), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byNode := waitRunning(ctx, t, ns, "web", 6, func(map[string][]corev1.Pod) bool { return true })
	for _, node := range nodeNames {
		if len(byNode[node]) == 0 {
			t.Errorf("no pod of the Deployment runs on %s: %s", node, describeSpread(byNode))
		}
	}
}

func TestPodFetchesPodOnAnotherNode(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "server"},
		Spec: corev1.PodSpec{
			NodeName:   "node-2",
			Containers: []corev1.Container{{Name: "testapp", Image: testapp}},
		},
	}
	createPod(ctx, t, ns, server)
	server = waitPod(ctx, t, ns, "server", "running with an IP", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
	})
	ip := server.Status.PodIP

	// The client retries because the route to node-2's podCIDR may still be
	// on its way to node-1; it fails if it never gets the server's answer.
	// nc rather than wget: Debian's static busybox wget crashes.
	script := fmt.Sprintf(`for i in $(seq 1 30); do
  out=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %[1]s 8080)
  echo "$out" | grep -q "ip=%[1]s " && echo "$out" && exit 0
  sleep 1
done
exit 1`, ip)
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{
			NodeName:      "node-1",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "wget", Image: busybox, Command: []string{"/bin/sh", "-c", script}}},
		},
	}
	createPod(ctx, t, ns, client)
	client = waitPod(ctx, t, ns, "client", "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if client.Status.Phase != corev1.PodSucceeded {
		t.Errorf("the pod on node-1 did not get testapp's answer from %s on node-2: %s", ip, describePod(client))
	}

	// The nodes route each other's podCIDRs: node-3 reaches the pod too.
	out, err := tryCommand(ctx, "docker", "exec", container(ctx, t, "node-3"), "curl", "-fsS", "--max-time", "5", "http://"+ip+":8080/")
	if err != nil || !strings.Contains(out, "ip="+ip+" ") {
		t.Errorf("curl from node-3 to %s: %q, %v", ip, out, err)
	}
}

// TestServiceByNameAcrossNodes: a pod on node-1 finds a Service by its DNS
// name (CoreDNS) and reaches both of its replicas on node-2 and node-3
// through node-1's kube-lite-proxy, and reaches the API as
// kubernetes.default.svc.
func TestServiceByNameAcrossNodes(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	const client = "node-1"

	web := offNode(testappDeployment("web", 2), client)
	if _, err := env.cs.AppsV1().Deployments(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := env.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byNode := waitRunning(ctx, t, ns, "web", 2, func(byNode map[string][]corev1.Pod) bool { return len(byNode) == 2 })
	replicas := map[string]bool{}
	for node, pods := range byNode {
		if node == client {
			t.Fatalf("a replica of web runs on %s, where the client runs: %s", client, describeSpread(byNode))
		}
		for _, p := range pods {
			replicas[p.Name] = true
		}
	}

	// The client waits for the name to resolve and a replica to answer
	// (CoreDNS and the proxies learn of the Service a moment after it is
	// created), then asks until both replicas have answered (node-1's proxy
	// may still have only the first ready one), at least 20 times, at most
	// 200: the test fails if one replica never answers. No wget -T: Debian's
	// static busybox wget crashes with it; timeout bounds each request.
	//
	// The API is asked in plain HTTP: busybox's own TLS sends no
	// signature_algorithms, which Go's TLS server (the apiserver's) refuses
	// since Go 1.25; its answer to plain HTTP is as much the apiserver's.
	url := fmt.Sprintf("http://web.%s.svc.cluster.local/", ns)
	script := fmt.Sprintf(`for i in $(seq 120); do timeout 3 wget -q -O /dev/null %[1]s && break; sleep 1; done
answers=""
for i in $(seq 200); do
  out=$(timeout 5 wget -q -O - %[1]s) && echo "$out" && answers="$answers
$out"
  [ "$i" -ge 20 ] && [ "$(echo "$answers" | sed -n 's/.*hostname=\([^ ]*\) .*/\1/p' | sort -u | wc -l)" -ge 2 ] && break
  sleep 0.1
done
printf 'GET /livez HTTP/1.0\r\n\r\n' | nc -w 5 kubernetes.default.svc 443`, url)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{corev1.LabelHostname: client},
					Containers:    []corev1.Container{{Name: "client", Image: busybox, Command: []string{"/bin/sh", "-c", script}}},
				},
			},
		},
	}
	if _, err := env.cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitJobPod(ctx, t, ns, "client")
	if pod.Spec.NodeName != client {
		t.Errorf("the client ran on %s, want %s", pod.Spec.NodeName, client)
	}
	logs, err := env.cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Errorf("the client on %s failed (%s); its log:\n%s", client, describePod(pod), logs)
	}
	answered := map[string]int{}
	for _, m := range hostnameRE.FindAllStringSubmatch(string(logs), -1) {
		answered[m[1]]++
	}
	for name := range replicas {
		if answered[name] == 0 {
			t.Errorf("replica %s never answered %s from %s (answers: %v); the client's log:\n%s", name, url, client, answered, logs)
		}
	}
	for name := range answered {
		if !replicas[name] {
			t.Errorf("%s answered %s but is no replica of web (%v)", name, url, sortedKeys(replicas))
		}
	}
	if want := "Client sent an HTTP request to an HTTPS server."; !strings.Contains(string(logs), want) {
		t.Errorf("the client's log has no %q from kubernetes.default.svc:443:\n%s", want, logs)
	}
}

func TestImagesComeFromTheRegistry(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	pod := func(name, image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeName:      "node-3",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullAlways, Command: []string{"/bin/sh", "-c", "echo pulled"}}},
			},
		}
	}
	createPod(ctx, t, ns, pod("present", busybox))
	createPod(ctx, t, ns, pod("missing", registry+"/kube-lite/no-such-image:1.0"))

	present := waitPod(ctx, t, ns, "present", "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if present.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod with %s: %s", busybox, describePod(present))
	}
	waitPod(ctx, t, ns, "missing", "in ImagePullBackOff", func(p *corev1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil && c.State.Waiting.Reason == "ImagePullBackOff" {
				return true
			}
		}
		return false
	})

	// The image node-3 runs is the registry's: containerd recorded it
	// under the registry's name.
	images := command(ctx, t, "docker", "exec", container(ctx, t, "node-3"), "ctr", "-n", "k8s.io", "images", "ls", "-q")
	if !strings.Contains(images, busybox) {
		t.Errorf("node-3's containerd has no %s; it has:\n%s", busybox, images)
	}
}

func TestGracefulDeleteOnRemoteNode(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	// testapp writes TERM_MARKER when SIGTERM arrives; the marker's
	// directory is on node-2, outside the pod.
	dir := "/tmp/e2e-" + ns
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "graceful"},
		Spec: corev1.PodSpec{
			NodeName:                      "node-2",
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{
				Name:         "testapp",
				Image:        testapp,
				Env:          []corev1.EnvVar{{Name: "TERM_MARKER", Value: "/marker/terminated"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "marker", MountPath: "/marker"}},
			}},
			Volumes: []corev1.Volume{{Name: "marker", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)},
			}}},
		},
	}
	createPod(ctx, t, ns, pod)
	pod = waitPod(ctx, t, ns, "graceful", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	uid := pod.UID

	if err := env.cs.CoreV1().Pods(ns).Delete(ctx, "graceful", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the pod to be gone", func(ctx context.Context) (bool, string, error) {
		p, err := env.cs.CoreV1().Pods(ns).Get(ctx, "graceful", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.UID != uid) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, describePod(p), nil
	})
	node2 := container(ctx, t, "node-2")
	out, err := tryCommand(ctx, "docker", "exec", node2, "cat", dir+"/terminated")
	if err != nil || out != "terminated" {
		t.Errorf("testapp on node-2 left no SIGTERM marker (%q, %v): the kubelet did not stop it gracefully", out, err)
	}
	_, _ = tryCommand(ctx, "docker", "exec", node2, "rm", "-rf", dir)
}

func TestAPIWorksWithOneEtcdMemberDown(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	// etcd-1 is first in both apiservers' --etcd-servers: the member their
	// clients most likely talk to.
	docker(ctx, t, "kill", container(ctx, t, "etcd-1"))
	restartService(t, "etcd-1")

	// Both apiservers, each on its published port, still read and write.
	for i, port := range []string{getenv("KUBE_LITE_COMPOSE_PORT", "26443"), getenv("KUBE_LITE_COMPOSE_PORT2", "26444")} {
		cs := clientFor(t, port)
		name := fmt.Sprintf("written-%d", i+1)
		waitFor(ctx, t, "a write through the apiserver on port "+port, func(ctx context.Context) (bool, string, error) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"etcd-1": "down"}}
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return false, "", err
			}
			got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return got.Data["etcd-1"] == "down", "", nil
		})
	}
	list, err := env.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, cm := range list.Items {
		names[cm.Name] = true
	}
	if !names["written-1"] || !names["written-2"] {
		t.Errorf("a list after the writes misses one of them: %v", names)
	}
}

// clientFor is the admin client with the apiserver on a given host port.
func clientFor(t *testing.T, port string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("https://127.0.0.1:"+port, env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestSchedulerLeaderHandsOver(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	holder := func(ctx context.Context) (string, error) {
		lease, err := env.cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
	}
	var leader string
	waitFor(ctx, t, "a scheduler leader", func(ctx context.Context) (bool, string, error) {
		h, err := holder(ctx)
		leader = h
		return strings.HasPrefix(h, "scheduler-1_") || strings.HasPrefix(h, "scheduler-2_"), "holder " + h, err
	})
	service, _, _ := strings.Cut(leader, "_")
	other := map[string]string{"scheduler-1": "scheduler-2", "scheduler-2": "scheduler-1"}[service]
	docker(ctx, t, "kill", container(ctx, t, service))
	restartService(t, service)

	waitFor(ctx, t, other+" to take the lease", func(ctx context.Context) (bool, string, error) {
		h, err := holder(ctx)
		return strings.HasPrefix(h, other+"_"), "holder " + h, err
	})
	// A pod created after the handover is scheduled and runs.
	createPod(ctx, t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "after-handover"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "testapp", Image: testapp}}},
	})
	waitPod(ctx, t, ns, "after-handover", "scheduled and running", func(p *corev1.Pod) bool {
		return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning
	})
}

func TestStoppedNodeIsReplaced(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	if _, err := env.cs.AppsV1().Deployments(ns).Create(ctx, testappDeployment("survivor", 6), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitRunning(ctx, t, ns, "survivor", 6, func(byNode map[string][]corev1.Pod) bool { return len(byNode["node-3"]) > 0 })
	gone := map[string]bool{}
	for _, p := range before["node-3"] {
		gone[p.Name] = true
	}

	docker(ctx, t, "stop", "--time", "1", container(ctx, t, "node-3"))
	t.Cleanup(func() {
		if _, err := tryCommand(context.Background(), "docker-compose", "-p", env.project, "-f", env.composeFile, "start", "node-3"); err != nil {
			t.Errorf("start node-3 again: %v", err)
			return
		}
		waitNodeReady(context.Background(), t, "node-3", true)
	})

	waitNodeReady(ctx, t, "node-3", false)
	after := waitRunning(ctx, t, ns, "survivor", 6, func(byNode map[string][]corev1.Pod) bool { return len(byNode["node-3"]) == 0 })
	for node, pods := range after {
		for _, p := range pods {
			if gone[p.Name] {
				t.Errorf("pod %s of the stopped node-3 counts as running on %s", p.Name, node)
			}
		}
	}
}
