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
	ok := &corev1.ServiceAccount{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}
	if errs := r.Strategy.Validate(context.Background(), ok); len(errs) != 0 {
		t.Errorf("valid: %v", errs)
	}
	bad := &corev1.ServiceAccount{ImagePullSecrets: []corev1.LocalObjectReference{{}}}
	errs := r.Strategy.ValidateUpdate(context.Background(), bad, ok)
	if len(errs) != 1 || errs[0].Error() != "imagePullSecrets[0].name: Required value" {
		t.Errorf("errors = %v", errs)
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
