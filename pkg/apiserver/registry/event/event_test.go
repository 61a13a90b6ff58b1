package event

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		ev   corev1.Event
		want []string
	}{
		{"pod event", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns"}, Type: "Normal"}, nil},
		{"node event in default", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}}, nil},
		{"namespace mismatch", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "b"}},
			[]string{`involvedObject.namespace: Invalid value: "b": does not match event.namespace`}},
		{"cluster object in other namespace", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}},
			[]string{`involvedObject.namespace: Invalid value: "": does not match event.namespace`}},
		{"free-text type in core/v1", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, Type: "Info"}, nil},
		{"new-style event without reporter", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, EventTime: metav1.NewMicroTime(now),
			Action: "Binding", Reason: "Scheduled", ReportingInstance: "sched-1"},
			// Upstream reports the empty name both as missing and as malformed.
			[]string{"reportingController: Required value", `reportingController: Invalid value: ""`, `reportingController: Invalid value: ""`}},
		{"new-style node event in kube-system", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system"}, EventTime: metav1.NewMicroTime(now),
			InvolvedObject: corev1.ObjectReference{Kind: "Node"}, ReportingController: "kubelet", ReportingInstance: "node-1", Action: "Start", Reason: "Starting"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), &tt.ev)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %q", errs, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %q, want prefix %q", e.Error(), tt.want[i])
				}
			}
		})
	}
}

func TestTable(t *testing.T) {
	base := corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "ns", FieldPath: "spec.containers{web}"},
		Reason:         "BackOff", Message: "Back-off restarting failed container\n", Type: "Warning",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(now.Add(-10 * time.Minute)),
		LastTimestamp:  metav1.NewTime(now.Add(-30 * time.Second)),
		Count:          7,
	}
	tests := []struct {
		name   string
		mutate func(e *corev1.Event)
		want   []interface{}
	}{
		{"repeated kubelet event", func(e *corev1.Event) {},
			[]interface{}{"30s", "Warning", "BackOff", "pod/web", "spec.containers{web}", "kubelet, node-1", "Back-off restarting failed container", "10m", int64(7), "web.1"}},
		{"events.k8s.io event", func(e *corev1.Event) {
			e.FirstTimestamp, e.LastTimestamp, e.Count = metav1.Time{}, metav1.Time{}, 0
			e.EventTime = metav1.NewMicroTime(now.Add(-5 * time.Second))
			e.Source = corev1.EventSource{}
			e.ReportingController, e.ReportingInstance = "default-scheduler", "sched-1"
		}, []interface{}{"5s", "Warning", "BackOff", "pod/web", "spec.containers{web}", "default-scheduler, sched-1", "Back-off restarting failed container", "5s", int64(1), "web.1"}},
		{"series", func(e *corev1.Event) {
			e.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-2 * time.Second))}
		}, []interface{}{"2s", "Warning", "BackOff", "pod/web", "spec.containers{web}", "kubelet, node-1", "Back-off restarting failed container", "10m", int64(3), "web.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base.DeepCopy()
			tt.mutate(e)
			cells, err := Resource(clocktesting.NewFakePassiveClock(now)).Table.Cells(e)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cells, tt.want) {
				t.Errorf("cells = %q\nwant    %q", cells, tt.want)
			}
		})
	}
}

func TestAttrs(t *testing.T) {
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "ns", UID: "u1", APIVersion: "v1", ResourceVersion: "5", FieldPath: "spec"},
		Reason:         "Started", Type: "Normal", Source: corev1.EventSource{Component: "kubelet"}, ReportingController: "kubelet",
	}
	_, fs, err := Resource(clocktesting.NewFakePassiveClock(now)).ObjectAttrs(e)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"involvedObject.kind": "Pod", "involvedObject.name": "web", "involvedObject.namespace": "ns", "involvedObject.uid": "u1",
		"involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "5", "involvedObject.fieldPath": "spec",
		"reason": "Started", "type": "Normal", "source": "kubelet", "reportingComponent": "kubelet",
	}
	for k, v := range want {
		if fs[k] != v {
			t.Errorf("%s = %q, want %q", k, fs[k], v)
		}
	}
}
