package serviceaccount

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestValidate(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	sa := &corev1.ServiceAccount{ImagePullSecrets: []corev1.LocalObjectReference{{}}}
	if errs := r.Strategy.Validate(context.Background(), sa); len(errs) != 0 {
		t.Errorf("an empty pull secret name is accepted upstream, got %v", errs)
	}
	if errs := r.Strategy.ValidateUpdate(context.Background(), &corev1.Pod{}, sa); len(errs) != 1 {
		t.Errorf("a pod given to the service account strategy: %v", errs)
	}
}

func TestTable(t *testing.T) {
	sa := &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default", CreationTimestamp: metav1.NewTime(now.Add(-49 * time.Hour))},
		Secrets:    []corev1.ObjectReference{{Name: "tok"}},
	}
	cells, err := Resource(clocktesting.NewFakePassiveClock(now)).Table.Cells(sa)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"default", int64(1), "2d1h"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %v, want %v", cells, want)
	}
}
