//go:build e2e

package kubelet

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A container exiting as its RestartAllContainers rule says (KEP-5532, on
// by default in upstream 1.36) restarts the pod in place: the pod says
// AllContainersRestarting, its init container runs again in the same
// sandbox (the emptyDir it appends to keeps both runs), and the pod is
// Running again, each container with one restart whose last state is
// upstream's RestartingAllContainers. Such a pod was refused at admission.
func TestRestartAllContainersRuleRestartsThePodInPlace(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	never := corev1.ContainerRestartPolicyNever
	work := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod := simplePod("restart-all", busybox, "sh", "-c",
		"cat /work/init; if [ -f /work/restarted ]; then exec sleep 3600; fi; touch /work/restarted; exit 42")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: busybox,
		Command: []string{"sh", "-c", "echo ran >> /work/init"}, VolumeMounts: work}}
	main := &pod.Spec.Containers[0]
	main.VolumeMounts = work
	main.RestartPolicy = &never
	main.RestartPolicyRules = []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	w, err := env.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=restart-all"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created := createPod(t, ns, pod)

	restarting := false
	var firstIP string
	var p *corev1.Pod
	for p == nil {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-ctx.Done():
			t.Fatal("the pod never ran again after the restart")
		}
		got, ok := ev.Object.(*corev1.Pod)
		if !ok || got.UID != created.UID {
			continue
		}
		if firstIP == "" {
			firstIP = got.Status.PodIP
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.AllContainersRestarting && c.Status == corev1.ConditionTrue {
				restarting = c.Reason == "RestartAllContainersStarted" && c.Message == "container exited with restart policy rule"
			}
		}
		if cs := got.Status.ContainerStatuses; got.Status.Phase == corev1.PodRunning && len(cs) == 1 && cs[0].State.Running != nil && cs[0].RestartCount > 0 {
			p = got
		}
	}
	if !restarting {
		t.Error("the pod never said AllContainersRestarting (RestartAllContainersStarted)")
	}
	if p.Status.PodIP != firstIP {
		t.Fatalf("pod IP %s, was %s: the sandbox should stay", p.Status.PodIP, firstIP)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.AllContainersRestarting && c.Status != corev1.ConditionFalse {
			t.Fatalf("still restarting once running again: %+v", c)
		}
	}
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || last == nil || last.Reason != "RestartingAllContainers" || last.ExitCode != 137 {
			t.Fatalf("%s: restartCount %d, lastState %+v, want 1 and RestartingAllContainers 137", cs.Name, cs.RestartCount, last)
		}
	}
	if init := p.Status.InitContainerStatuses[0]; init.State.Terminated == nil || init.State.Terminated.Reason != "Completed" {
		t.Fatalf("init container: %+v", init.State)
	}
	// The init container ran again, in the same sandbox: the emptyDir has
	// both of its runs.
	if out := waitLogs(t, ns, "restart-all", "main"); out != "ran\nran\n" {
		t.Fatalf("main saw the init container's runs as %q, want two", out)
	}
	node, err := env.cs.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(node.Status.DeclaredFeatures, "RestartAllContainersOnContainerExits") {
		t.Fatalf("node declaredFeatures %q, want RestartAllContainersOnContainerExits", node.Status.DeclaredFeatures)
	}
}
