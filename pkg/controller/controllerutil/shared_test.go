package controllerutil

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func TestPodDeletions(t *testing.T) {
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{UID: "a"}},
		{ObjectMeta: metav1.ObjectMeta{UID: "b"}},
	}
	tests := []struct {
		name          string
		observed      []types.UID
		wantSatisfied bool
	}{
		{name: "none seen", wantSatisfied: false},
		{name: "one seen twice counts once", observed: []types.UID{"a", "a"}, wantSatisfied: false},
		{name: "a foreign pod does not count", observed: []types.UID{"a", "other"}, wantSatisfied: false},
		{name: "all seen", observed: []types.UID{"a", "b"}, wantSatisfied: true},
		{name: "all seen, each twice", observed: []types.UID{"a", "b", "a", "b"}, wantSatisfied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewExpectations(fakeClock{})
			d := NewPodDeletions(e)
			d.Expect("k", pods)
			for _, uid := range tt.observed {
				d.Observed("k", uid)
			}
			if got := e.Satisfied("k"); got != tt.wantSatisfied {
				t.Fatalf("Satisfied = %v, want %v", got, tt.wantSatisfied)
			}
		})
	}
}

func TestFromDeleted(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	tests := []struct {
		name   string
		obj    any
		wantOK bool
	}{
		{name: "object", obj: pod, wantOK: true},
		{name: "tombstone", obj: cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, wantOK: true},
		{name: "tombstone of another type", obj: cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Node{}}},
		{name: "another type", obj: &corev1.Node{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FromDeleted[*corev1.Pod](tt.obj)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if ok && got != pod {
				t.Fatalf("got %v, want the pod", got)
			}
		})
	}
}

func TestParallel(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		n, failing int
		wantFailed int
	}{
		{name: "none", n: 0},
		{name: "all succeed", n: 4},
		{name: "some fail", n: 5, failing: 2, wantFailed: 2},
		{name: "all fail", n: 3, failing: 3, wantFailed: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			failed, first := Parallel(tt.n, func(int) error {
				if int(calls.Add(1)) <= tt.failing {
					return boom
				}
				return nil
			})
			if int(calls.Load()) != tt.n {
				t.Errorf("calls = %d, want %d", calls.Load(), tt.n)
			}
			if failed != tt.wantFailed {
				t.Errorf("failed = %d, want %d", failed, tt.wantFailed)
			}
			if (first != nil) != (tt.wantFailed > 0) || (first != nil && !errors.Is(first, boom)) {
				t.Errorf("first = %v", first)
			}
		})
	}
}

func TestCanAdopt(t *testing.T) {
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}}
	now := metav1.Now()
	tests := []struct {
		name    string
		stored  *corev1.Pod
		wantErr bool
	}{
		{name: "same owner", stored: owner.DeepCopy()},
		{name: "gone", wantErr: true},
		{name: "replaced", stored: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u2"}}, wantErr: true},
		{name: "being deleted", stored: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1", DeletionTimestamp: &now, Finalizers: []string{"f"}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.stored != nil {
				client = fake.NewClientset(tt.stored)
			}
			err := CanAdopt("pod", owner, client.CoreV1().Pods("ns").Get)(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestSlowStartStopsAtFirstFailingBatch(t *testing.T) {
	var calls atomic.Int32
	done, err := SlowStart(10, func(int) error {
		if calls.Add(1) > 3 {
			return errors.New("quota")
		}
		return nil
	})
	if err == nil || done != 3 || calls.Load() != 7 {
		t.Fatalf("done=%d calls=%d err=%v, want 3 done in batches 1+2 then a failing batch of 4", done, calls.Load(), err)
	}
}
