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
		// Upstream 1.36's words for the cases below.
		{"missing type", []corev1.LimitRangeItem{{}}, []string{
			`spec.limits[0].type: Invalid value: "": name part must be non-empty`,
			`spec.limits[0].type: Invalid value: "": name part must consist of alphanumeric characters`,
		}},
		{"unknown type", []corev1.LimitRangeItem{{Type: "Bogus"}}, []string{`spec.limits[0].type: Invalid value: "Bogus": must be a standard limit type or fully qualified`}},
		{"qualified type", []corev1.LimitRangeItem{{Type: "example.com/custom", Max: cpu("1")}}, nil},
		{"claims need a storage bound", []corev1.LimitRangeItem{{Type: corev1.LimitTypePersistentVolumeClaim, Max: cpu("1")}},
			[]string{"spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"}},
		{"unknown container resource", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"foo": resource.MustParse("1")}}}, []string{
			`spec.limits[0].max[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
			`spec.limits[0].max[foo]: Invalid value: "foo": must be a standard resource for containers`,
		}},
		{"ratio above max/min", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: cpu("1"), Max: cpu("4"), MaxLimitRequestRatio: cpu("5")}},
			[]string{`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "5": ratio 5 is greater than max/min = 4.000000`}},
		{"extended resource default and request differ", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}, DefaultRequest: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}},
			[]string{`spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: "1": default value 2 must equal to defaultRequest value 1 in example.com/gpu`}},
		{"duplicate type", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer}, {Type: corev1.LimitTypeContainer}},
			[]string{`spec.limits[1].type: Duplicate value: "Container"`}},
		{"min above max", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: cpu("2"), Max: cpu("1")}},
			[]string{`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`}},
		{"default above max", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: cpu("2"), Max: cpu("1")}},
			[]string{`spec.limits[0].default[cpu]: Invalid value: "1": default value 2 is greater than max value 1`}},
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

// A Container item is stored with upstream's defaults: the default limit
// from max, the default request from the default limit, then from min.
func TestDefaultFillsContainerDefaults(t *testing.T) {
	l := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("1Gi")},
			Min: corev1.ResourceList{"ephemeral-storage": resource.MustParse("1Gi")}, Default: cpu("1")},
		{Type: corev1.LimitTypePod, Max: cpu("4")},
	}}}
	Resource(nil).Strategy.Default(l)
	c := l.Spec.Limits[0]
	want := func(list corev1.ResourceList, kv ...string) {
		t.Helper()
		if len(list) != len(kv)/2 {
			t.Errorf("%v, want %v", list, kv)
		}
		for i := 0; i < len(kv); i += 2 {
			if q := list[corev1.ResourceName(kv[i])]; q.String() != kv[i+1] {
				t.Errorf("%s = %s, want %s (in %v)", kv[i], q.String(), kv[i+1], list)
			}
		}
	}
	want(c.Default, "cpu", "1", "memory", "1Gi")
	want(c.DefaultRequest, "cpu", "1", "memory", "1Gi", "ephemeral-storage", "1Gi")
	if p := l.Spec.Limits[1]; p.Default != nil || p.DefaultRequest != nil {
		t.Errorf("pod item defaulted: %+v", p)
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
