package pod

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
}

func TestTableCells(t *testing.T) {
	created := metav1.NewTime(now.Add(-10 * time.Minute))
	deleted := metav1.NewTime(now)
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name   string
		pod    func(p *corev1.Pod)
		want   []interface{} // NAME READY STATUS RESTARTS AGE
		wantIP string
	}{
		{"pending, unscheduled", func(p *corev1.Pod) {},
			[]interface{}{"web", "0/1", "Pending", "0", "10m"}, "<none>"},
		{"container creating", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: waiting("ContainerCreating")}}
		}, []interface{}{"web", "0/1", "ContainerCreating", "0", "10m"}, "<none>"},
		{"running and ready", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = "10.244.0.7"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true, State: running()}}
		}, []interface{}{"web", "1/1", "Running", "0", "10m"}, "10.244.0.7"},
		{"crash loop", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: "web", RestartCount: 4, State: waiting("CrashLoopBackOff"),
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(now.Add(-3 * time.Minute))}},
			}}
		}, []interface{}{"web", "0/1", "CrashLoopBackOff", "4 (3m ago)", "10m"}, "<none>"},
		{"completed", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: terminated(0, "Completed")}}
		}, []interface{}{"web", "0/1", "Completed", "0", "10m"}, "<none>"},
		{"exit code without reason", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: terminated(2, "")}}
		}, []interface{}{"web", "0/1", "ExitCode:2", "0", "10m"}, "<none>"},
		{"terminating", func(p *corev1.Pod) {
			p.DeletionTimestamp = &deleted
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true, State: running()}}
		}, []interface{}{"web", "1/1", "Terminating", "0", "10m"}, "<none>"},
		{"deleted after finishing is not terminating", func(p *corev1.Pod) {
			p.DeletionTimestamp = &deleted
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: terminated(0, "Completed")}}
		}, []interface{}{"web", "0/1", "Completed", "0", "10m"}, "<none>"},
		{"second init container running", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "a"}, {Name: "b"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "a", State: terminated(0, "Completed")},
				{Name: "b", State: running()},
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: waiting("PodInitializing")}}
		}, []interface{}{"web", "0/1", "Init:1/2", "0", "10m"}, "<none>"},
		{"init container failed", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "a"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "a", RestartCount: 1, State: terminated(1, "Error")}}
		}, []interface{}{"web", "0/1", "Init:Error", "1", "10m"}, "<none>"},
		{"init container crash loop", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "a"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: waiting("CrashLoopBackOff")}}
		}, []interface{}{"web", "0/1", "Init:CrashLoopBackOff", "0", "10m"}, "<none>"},
		{"sidecar counts as a container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Ready: true, Started: ptr(true), State: running()}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true, State: running()}}
		}, []interface{}{"web", "2/2", "Running", "0", "10m"}, "<none>"},
		{"one of two finished", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "job"})
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "web", Ready: true, State: running()},
				{Name: "job", State: terminated(0, "Completed")},
			}
		}, []interface{}{"web", "1/2", "NotReady", "0", "10m"}, "<none>"},
		{"scheduling gated", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
		}, []interface{}{"web", "0/1", "SchedulingGated", "0", "10m"}, "<none>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: created},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodPending},
			}
			tt.pod(p)
			tbl := Resource(clocktesting.NewFakePassiveClock(now)).Table
			cells, err := tbl.Cells(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != len(tbl.Columns()) {
				t.Fatalf("%d cells for %d columns", len(cells), len(tbl.Columns()))
			}
			if !reflect.DeepEqual(cells[:5], tt.want) {
				t.Errorf("cells = %q, want %q", cells[:5], tt.want)
			}
			if cells[5] != tt.wantIP {
				t.Errorf("IP = %q, want %q", cells[5], tt.wantIP)
			}
		})
	}
}

func TestTableColumns(t *testing.T) {
	var names []string
	var wide []string
	for _, c := range Resource(clocktesting.NewFakePassiveClock(now)).Table.Columns() {
		if c.Priority == 0 {
			names = append(names, c.Name)
		} else {
			wide = append(wide, c.Name)
		}
	}
	if want := []string{"Name", "Ready", "Status", "Restarts", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %q, want %q", names, want)
	}
	if want := []string{"IP", "Node", "Nominated Node", "Readiness Gates"}; !reflect.DeepEqual(wide, want) {
		t.Errorf("wide columns = %q, want %q", wide, want)
	}
}
