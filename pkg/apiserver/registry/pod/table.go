package pod

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// nodeUnreachableReason is what the node lifecycle controller writes into a
// pod's status.reason when it evicts pods from a lost node.
const nodeUnreachableReason = "NodeLost"

func table(c clock.PassiveClock) registry.TableConvertor {
	podStatusDocs := corev1.PodStatus{}.SwaggerDoc()
	podSpecDocs := corev1.PodSpec{}.SwaggerDoc()
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
		tableutil.Column("Status", "string", 0, "The aggregate status of the containers in this pod."),
		tableutil.Column("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		tableutil.AgeColumn(),
		tableutil.Column("IP", "string", 1, podStatusDocs["podIP"]),
		tableutil.Column("Node", "string", 1, podSpecDocs["nodeName"]),
		tableutil.Column("Nominated Node", "string", 1, podStatusDocs["nominatedNodeName"]),
		tableutil.Column("Readiness Gates", "string", 1, podSpecDocs["readinessGates"]),
	}
	return tableutil.New(cols, func(pod *corev1.Pod) []interface{} {
		return row(pod, c.Now())
	})
}

// row renders a pod as `kubectl get pods` does: the STATUS column is the most
// telling reason among the init containers (while initializing), then the
// containers, then the phase; RESTARTS adds when the last restart was.
func row(pod *corev1.Pod, now time.Time) []interface{} {
	st := &pod.Status
	reason := string(st.Phase)
	if st.Reason != "" {
		reason = st.Reason
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	total := len(pod.Spec.Containers)
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}

	ready, restarts, sidecarRestarts := 0, 0, 0
	var lastRestart, lastSidecarRestart metav1.Time
	initializing := false
	for i, cs := range st.InitContainerStatuses {
		restarts += int(cs.RestartCount)
		later(&lastRestart, cs.LastTerminationState.Terminated)
		if sidecars[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			later(&lastSidecarRestart, cs.LastTerminationState.Terminated)
		}
		term, wait := cs.State.Terminated, cs.State.Waiting
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				ready++
			}
			continue
		case term != nil:
			switch {
			case term.Reason != "":
				reason = "Init:" + term.Reason
			case term.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			reason = "Init:" + wait.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || conditionTrue(st.Conditions, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		running := false
		// Walk backwards so that the first container's reason wins, as upstream.
		for i := len(st.ContainerStatuses) - 1; i >= 0; i-- {
			cs := st.ContainerStatuses[i]
			restarts += int(cs.RestartCount)
			later(&lastRestart, cs.LastTerminationState.Terminated)
			term, wait := cs.State.Terminated, cs.State.Waiting
			switch {
			case wait != nil && wait.Reason != "":
				reason = wait.Reason
			case term != nil && term.Reason != "":
				reason = term.Reason
			case term != nil && term.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", term.Signal)
			case term != nil:
				reason = fmt.Sprintf("ExitCode:%d", term.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				running = true
				ready++
			}
		}
		// One container finished while another still runs: the pod is not done.
		if reason == "Completed" && running {
			if conditionTrue(st.Conditions, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	switch {
	case pod.DeletionTimestamp != nil && st.Reason == nodeUnreachableReason:
		reason = "Unknown"
	case pod.DeletionTimestamp != nil && !terminal(st.Phase):
		reason = "Terminating"
	}

	restartsCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", restarts, tableutil.Age(lastRestart, now))
	}

	podIP := st.PodIP
	if len(st.PodIPs) > 0 {
		podIP = st.PodIPs[0].IP
	}
	gates := tableutil.None
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			if conditionTrue(st.Conditions, g.ConditionType) {
				trueGates++
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, n)
	}
	return []interface{}{
		pod.Name,
		fmt.Sprintf("%d/%d", ready, total),
		reason,
		restartsCell,
		tableutil.Age(pod.CreationTimestamp, now),
		orNone(podIP),
		orNone(pod.Spec.NodeName),
		orNone(st.NominatedNodeName),
		gates,
	}
}

// later moves t to term's finish time when that is later.
func later(t *metav1.Time, term *corev1.ContainerStateTerminated) {
	if term != nil && t.Before(&term.FinishedAt) {
		*t = term.FinishedAt
	}
}

func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return tableutil.None
	}
	return s
}
