//go:build e2e

package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An init container's own restartPolicy decides over the pod's, as upstream
// 1.36's (ContainerRestartRules): in a Never pod, an OnFailure init
// container that fails runs again and, once it succeeds, the pod runs; in an
// Always pod, a Never init container that fails fails the pod. Such pods
// were refused, and the kubelet followed only the pod's policy.
func TestInitContainerOwnRestartPolicy(t *testing.T) {
	requireCluster(t)
	ns := namespace(t)
	work := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	onFailure, never := corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyNever

	retried := simplePod("init-onfailure", busybox, "sleep", "3600")
	retried.Spec.RestartPolicy = corev1.RestartPolicyNever
	retried.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: busybox, RestartPolicy: &onFailure,
		// Fails the first time, succeeds the second.
		Command: []string{"sh", "-c", "if [ -f /work/tried ]; then exit 0; fi; touch /work/tried; exit 3"}, VolumeMounts: work}}
	retried.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}

	failed := simplePod("init-never", busybox, "sleep", "3600")
	failed.Spec.RestartPolicy = corev1.RestartPolicyAlways
	failed.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: busybox, RestartPolicy: &never,
		Command: []string{"sh", "-c", "exit 3"}}}

	createPod(t, ns, retried)
	createPod(t, ns, failed)

	p := waitPod(t, ns, "init-onfailure", "Running", running)
	setup := p.Status.InitContainerStatuses[0]
	last := setup.LastTerminationState.Terminated
	if setup.RestartCount != 1 || setup.State.Terminated == nil || setup.State.Terminated.ExitCode != 0 || last == nil || last.ExitCode != 3 {
		t.Fatalf("retried init container: restartCount %d, state %+v, last state %+v; want 1, exit 0, last exit 3",
			setup.RestartCount, setup.State, setup.LastTerminationState)
	}

	p = waitPod(t, ns, "init-never", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	setup = p.Status.InitContainerStatuses[0]
	if setup.RestartCount != 0 || setup.State.Terminated == nil || setup.State.Terminated.ExitCode != 3 {
		t.Fatalf("Never init container: restartCount %d, state %+v; want terminated with 3, not restarted", setup.RestartCount, setup.State)
	}
	if main := p.Status.ContainerStatuses[0]; main.State.Running != nil || main.RestartCount != 0 {
		t.Fatalf("main of the failed pod: %+v", main)
	}
}
