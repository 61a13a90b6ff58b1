package limitrange

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func cpu(v string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		items []corev1.LimitRangeItem
		want  []string
	}{
		{"sane container limits", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Min: cpu("100m"), DefaultRequest: cpu("200m"), Default: cpu("500m"), Max: cpu("1"), MaxLimitRequestRatio: cpu("4")}}, nil},
		{"missing type", []corev1.LimitRangeItem{{}}, []string{"spec.limits[0].type: Required value"}},
		{"duplicate type", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer}, {Type: corev1.LimitTypeContainer}},
			[]string{`spec.limits[1].type: Duplicate value: "Container"`}},
		{"min above max", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: cpu("2"), Max: cpu("1")}},
			[]string{`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`}},
		{"default above max", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: cpu("2"), Max: cpu("1")}},
			[]string{`spec.limits[0].default[cpu]: Invalid value: "2": default value 2 is greater than max value 1`}},
		{"default request above default", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, DefaultRequest: cpu("2"), Default: cpu("1")}},
			[]string{`spec.limits[0].defaultRequest[cpu]: Invalid value: "2": default request value 2 is greater than default limit value 1`}},
		{"pod default", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Default: cpu("1")}},
			[]string{"spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"}},
		{"ratio below one", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: cpu("500m")}},
			[]string{`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1`}},
		{"negative", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: cpu("-1")}},
			[]string{`spec.limits[0].max[cpu]: Invalid value: "-1": must be greater than or equal to 0`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: tt.items}}
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), l)
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
	created := time.Date(2026, 2, 3, 4, 5, 6, 0, time.FixedZone("CET", 3600))
	l := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", CreationTimestamp: metav1.NewTime(created)}}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	cells, err := r.Table.Cells(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"defaults", "2026-02-03T03:05:06Z"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %v, want %v", cells, want)
	}
	if cols := r.Table.Columns(); cols[1].Name != "Created At" {
		t.Errorf("columns = %v", cols)
	}
}
