//go:build e2e

package compose

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

// hostnameRE finds who answered in testapp's "ip=... hostname=... version=...".
var hostnameRE = regexp.MustCompile(`ip=\S+ hostname=(\S+) version=`)

// namespace creates a namespace named after the test and deletes it when
// the test ends.
func namespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	name := "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := env.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// testappDeployment runs replicas of the testapp pulled from the compose
// registry. Its pods leave an unreachable or not-ready node after a few
// seconds instead of the default five minutes.
func testappDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	tolerate := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](2)}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Tolerations:                   []corev1.Toleration{tolerate("node.kubernetes.io/unreachable"), tolerate("node.kubernetes.io/not-ready")},
					Containers: []corev1.Container{{
						Name:  "testapp",
						Image: testapp,
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: e2eutil.IntOrString(8080)}},
							PeriodSeconds: 2,
						},
					}},
				},
			},
		},
	}
}

// runningPods lists the pods of a Deployment that run and are not being
// deleted, by node.
//
// The string describes the pods that are not running yet.
func runningPods(ctx context.Context, ns, app string) (map[string][]corev1.Pod, int, string, error) {
	list, err := env.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, 0, "", err
	}
	byNode := map[string][]corev1.Pod{}
	n := 0
	var others []string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || !e2eutil.PodReady(&p) {
			if p.DeletionTimestamp == nil {
				others = append(others, p.Name+" "+describePod(&p))
			}
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		n++
	}
	return byNode, n, strings.Join(others, "; "), nil
}

// describeSpread is "node-1=2 node-2=2 node-3=2" for failure messages.
func describeSpread(byNode map[string][]corev1.Pod) string {
	var parts []string
	for node, pods := range byNode {
		parts = append(parts, fmt.Sprintf("%s=%d", node, len(pods)))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// waitRunning waits until the Deployment has want running, ready pods that
// satisfy accept, and returns them by node.
func waitRunning(ctx context.Context, t *testing.T, ns, app string, want int, accept func(map[string][]corev1.Pod) bool) map[string][]corev1.Pod {
	t.Helper()
	var got map[string][]corev1.Pod
	waitFor(ctx, t, fmt.Sprintf("%d running pods of %s", want, app), func(ctx context.Context) (bool, string, error) {
		byNode, n, others, err := runningPods(ctx, ns, app)
		if err != nil {
			return false, "", err
		}
		got = byNode
		return n == want && accept(byNode), fmt.Sprintf("%d running: %s; not running: %s", n, describeSpread(byNode), others), nil
	})
	return got
}

// waitNodeReady waits until the node reports want in its Ready condition;
// a node that should be Ready must also have lost the not-ready and
// unreachable taints, so that pods can go there again.
func waitNodeReady(ctx context.Context, t *testing.T, name string, want bool) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("node %s Ready=%t", name, want), func(ctx context.Context) (bool, string, error) {
		node, err := env.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		status := corev1.ConditionUnknown
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = c.Status
			}
		}
		ready := status == corev1.ConditionTrue
		state := fmt.Sprintf("Ready=%s taints=%v", status, node.Spec.Taints)
		if want {
			return ready && len(node.Spec.Taints) == 0, state, nil
		}
		return !ready, state, nil
	})
}

// waitPod waits until cond accepts the pod and returns it.
func waitPod(ctx context.Context, t *testing.T, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(ctx, t, fmt.Sprintf("pod %s/%s %s", ns, name, what), func(ctx context.Context) (bool, string, error) {
		p, err := env.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pod = p
		return cond(p), describePod(p), nil
	})
	return pod
}

func describePod(p *corev1.Pod) string {
	s := fmt.Sprintf("phase=%s node=%s", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			s += fmt.Sprintf(" %s waiting %s: %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Terminated != nil:
			s += fmt.Sprintf(" %s terminated %s (exit %d)", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		case c.State.Running != nil:
			s += fmt.Sprintf(" %s running", c.Name)
		}
	}
	return s
}

func createPod(ctx context.Context, t *testing.T, ns string, pod *corev1.Pod) {
	t.Helper()
	if _, err := env.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
}

// restartService starts a stopped or killed service's container again at
// the end of a test, so that later tests see the whole cluster.
func restartService(t *testing.T, service string) {
	t.Helper()
	t.Cleanup(func() {
		if _, err := tryCommand(context.Background(), "docker-compose", "-p", env.project, "-f", env.composeFile, "start", service); err != nil {
			t.Errorf("start %s again: %v", service, err)
		}
	})
}

// offNode keeps a Deployment's pods off one node and each on a node of its
// own.
func offNode(d *appsv1.Deployment, node string) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{node},
				}}}},
			},
		},
		PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: d.Spec.Selector,
				TopologyKey:   corev1.LabelHostname,
			}},
		},
	}
	return d
}

// waitJobPod waits until the Job's pod has finished and returns it.
func waitJobPod(ctx context.Context, t *testing.T, ns, job string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(ctx, t, "the pod of job "+job+" to finish", func(ctx context.Context) (bool, string, error) {
		list, err := env.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return false, "", err
		}
		if len(list.Items) == 0 {
			return false, "no pod yet", nil
		}
		pod = &list.Items[0]
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, describePod(pod), nil
	})
	return pod
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
