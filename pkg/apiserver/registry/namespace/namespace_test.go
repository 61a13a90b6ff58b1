package namespace

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

func create(t *testing.T, ns *corev1.Namespace) *corev1.Namespace {
	t.Helper()
	r := Resource(clocktesting.NewFakePassiveClock(now))
	r.Strategy.Default(ns)
	r.Strategy.PrepareForCreate(context.Background(), ns)
	if errs := r.Strategy.Validate(context.Background(), ns); len(errs) > 0 {
		t.Fatal(errs)
	}
	return ns
}

func TestCreate(t *testing.T) {
	ns := create(t, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/cleanup"}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	})
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("phase = %s, want Active", ns.Status.Phase)
	}
	if want := []corev1.FinalizerName{"example.com/cleanup", "kubernetes"}; !reflect.DeepEqual(ns.Spec.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", ns.Spec.Finalizers, want)
	}
	if ns.Labels[corev1.LabelMetadataName] != "team-a" {
		t.Errorf("labels = %v", ns.Labels)
	}
	again := create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}})
	if len(again.Spec.Finalizers) != 1 {
		t.Errorf("kubernetes finalizer added twice: %v", again.Spec.Finalizers)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		ns   corev1.Namespace
		want []string
	}{
		{"bad finalizer", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"cleanup"}}},
			[]string{`spec.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified`}},
		{"wrong name label", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"kubernetes.io/metadata.name": "b"}}},
			[]string{`metadata.labels[kubernetes.io/metadata.name]: Invalid value: "b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), &tt.ns)
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

func TestNameIsALabel(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	if msgs := r.ValidateName("a.b", false); len(msgs) == 0 {
		t.Error("a.b accepted as a namespace name")
	}
	if msgs := r.ValidateName("team-a", false); len(msgs) != 0 {
		t.Errorf("team-a rejected: %v", msgs)
	}
}

func TestUpdatePaths(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}})

	// The main endpoint cannot drop the finalizer or change the phase.
	upd := old.DeepCopy()
	upd.Spec.Finalizers = nil
	upd.Status.Phase = corev1.NamespaceTerminating
	r.Strategy.PrepareForUpdate(context.Background(), upd, old)
	if len(upd.Spec.Finalizers) != 1 || upd.Status.Phase != corev1.NamespaceActive {
		t.Errorf("update changed finalizers/status: %+v %+v", upd.Spec, upd.Status)
	}

	// /finalize can drop it, but not the phase.
	fin := old.DeepCopy()
	fin.Spec.Finalizers = nil
	fin.Status.Phase = corev1.NamespaceTerminating
	FinalizeStrategy().PrepareForUpdate(context.Background(), fin, old)
	if len(fin.Spec.Finalizers) != 0 || fin.Status.Phase != corev1.NamespaceActive {
		t.Errorf("finalize: %+v %+v", fin.Spec, fin.Status)
	}

	// /status: Terminating only with a deletion timestamp.
	st := old.DeepCopy()
	st.Status.Phase = corev1.NamespaceTerminating
	r.Status.PrepareForUpdate(context.Background(), st, old)
	if errs := r.Status.ValidateUpdate(context.Background(), st, old); len(errs) != 1 {
		t.Errorf("terminating without deletion: %v", errs)
	}
	deleted := metav1.NewTime(now)
	st.DeletionTimestamp = &deleted
	if errs := r.Status.ValidateUpdate(context.Background(), st, old); len(errs) != 0 {
		t.Errorf("terminating with deletion: %v", errs)
	}
}

func TestTableAndAttrs(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	ns := create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: metav1.NewTime(now.Add(-30 * 24 * time.Hour))}})
	cells, err := r.Table.Cells(ns)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"a", "Active", "30d"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %v, want %v", cells, want)
	}
	_, fs, err := r.ObjectAttrs(ns)
	if err != nil || fs["status.phase"] != "Active" {
		t.Errorf("fields = %v, %v", fs, err)
	}
}
