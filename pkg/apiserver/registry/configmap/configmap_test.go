package configmap

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
		cm   corev1.ConfigMap
		want []string // error prefixes
	}{
		{"valid", corev1.ConfigMap{Data: map[string]string{"app.conf": "x", "KEY_1": "y"}}, nil},
		{"bad key", corev1.ConfigMap{Data: map[string]string{"a/b": "x"}}, []string{`data[a/b]: Invalid value: "a/b"`}},
		{"key in both", corev1.ConfigMap{Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": nil}},
			[]string{`data[k]: Invalid value: "k": duplicate of key present in binaryData`}},
		{"too big", corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", 1<<20), "b": "y"}},
			[]string{"[]: Too long: may not be more than 1048576 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), &tt.cm)
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

func TestImmutable(t *testing.T) {
	yes, no := true, false
	old := &corev1.ConfigMap{Immutable: &yes, Data: map[string]string{"a": "1"}}
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want int
	}{
		{"unchanged", &corev1.ConfigMap{Immutable: &yes, Data: map[string]string{"a": "1"}}, 0},
		{"labels may change", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}}, Immutable: &yes, Data: map[string]string{"a": "1"}}, 0},
		{"data changed", &corev1.ConfigMap{Immutable: &yes, Data: map[string]string{"a": "2"}}, 1},
		{"made mutable and changed", &corev1.ConfigMap{Immutable: &no, Data: map[string]string{}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.ValidateUpdate(context.Background(), tt.cm, old)
			if len(errs) != tt.want {
				t.Fatalf("errors = %v, want %d", errs, tt.want)
			}
			for _, e := range errs {
				if !strings.Contains(e.Error(), "field is immutable when `immutable` is set") {
					t.Errorf("unexpected error %v", e)
				}
			}
		})
	}
}

func TestTable(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
		Data:       map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}},
	}
	cells, err := Resource(clocktesting.NewFakePassiveClock(now)).Table.Cells(cm)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"settings", int64(3), "120m"}; !reflect.DeepEqual(cells, want) {
		t.Fatalf("cells = %v, want %v", cells, want)
	}
}
