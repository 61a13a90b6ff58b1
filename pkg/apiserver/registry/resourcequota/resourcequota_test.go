package resourcequota

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

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		q    corev1.ResourceQuota
		want []string
	}{
		{"valid", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "10", "requests.cpu", "4", "limits.memory", "8Gi")}}, nil},
		{"negative", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "-1")}},
			[]string{`spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`}},
		{"bad scope", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"Sometimes"}}},
			[]string{`spec.scopes: Invalid value: ["Sometimes"]: unsupported scope`}},
		// The cases below are what upstream 1.36's kube-apiserver answers;
		// kube-lite accepted these quotas.
		{"unknown and fractional resources", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("foo", "1", "storage", "1", "requests.foo", "1",
			"example.com/x", "1.5", "count/pods", "1.5", "services", "0.5", "requests.example.com/gpu", "1.5", "limits.example.com/gpu", "1")}},
			[]string{
				`spec.hard[count/pods]: Invalid value: "1500m": must be an integer`,
				`spec.hard[example.com/x]: Invalid value: "1500m": must be an integer`,
				`spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
				`spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota`,
				`spec.hard[requests.foo]: Invalid value: "requests.foo": must be a standard resource type or fully qualified`,
				`spec.hard[requests.foo]: Invalid value: "requests.foo": must be a standard resource for quota`,
				`spec.hard[services]: Invalid value: "500m": must be an integer`,
				`spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota`,
			}},
		{"scope selector", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "1", "hugepages-2Mi", "1Gi"),
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn},
				{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}},
				{ScopeName: "Bogus", Operator: "Maybe"},
			}}}},
			[]string{
				`spec.scopeSelector.matchExpressions: Invalid value: {"MatchExpressions":[{"ScopeName":"PriorityClass","Operator":"In","Values":null},{"ScopeName":"BestEffort","Operator":"In","Values":["x"]},{"ScopeName":"Bogus","Operator":"Maybe","Values":null}]}: unsupported scope applied to resource`,
				"spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
				`spec.scopeSelector.matchExpressions: Invalid value: {"MatchExpressions":[{"ScopeName":"PriorityClass","Operator":"In","Values":null},{"ScopeName":"BestEffort","Operator":"In","Values":["x"]},{"ScopeName":"Bogus","Operator":"Maybe","Values":null}]}: unsupported scope applied to resource`,
				`spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity`,
				`spec.scopeSelector.matchExpressions.scopeName: Invalid value: "Bogus": unsupported scope`,
				`spec.scopeSelector.matchExpressions.operator: Invalid value: "Maybe": not a valid selector operator`,
			}},
		{"conflicting scopes", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"BestEffort", "NotBestEffort"}}},
			[]string{"spec.scopes: Invalid value"}},
		{"best effort pods request no cpu", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("cpu", "1", "pods", "3"),
			Scopes: []corev1.ResourceQuotaScope{"BestEffort"}}},
			[]string{`spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource`}},
		{"pod scope on configmaps", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("configmaps", "1", "count/deployments.apps", "2", "requests.memory", "1Gi"),
			Scopes: []corev1.ResourceQuotaScope{"NotTerminating"}}},
			[]string{`spec.scopes: Invalid value: ["NotTerminating"]: unsupported scope applied to resource`}},
		{"pod scopes on pod resources", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "1", "limits.cpu", "2"),
			Scopes: []corev1.ResourceQuotaScope{"Terminating", "NotBestEffort"}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), &tt.q)
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

func TestStatusSubresource(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "10")}, Status: corev1.ResourceQuotaStatus{Used: list("pods", "3")}}
	r.Strategy.PrepareForCreate(context.Background(), q)
	if q.Status.Used != nil {
		t.Fatalf("create kept client status %v", q.Status)
	}
	old := q.DeepCopy()

	st := old.DeepCopy()
	st.Spec.Hard = list("pods", "99")
	st.Status = corev1.ResourceQuotaStatus{Hard: list("pods", "10"), Used: list("pods", "3")}
	r.Status.PrepareForUpdate(context.Background(), st, old)
	if st.Spec.Hard.Pods().String() != "10" || st.Status.Used.Pods().String() != "3" {
		t.Errorf("status update: spec %v status %v", st.Spec.Hard, st.Status)
	}

	upd := st.DeepCopy()
	upd.Status = corev1.ResourceQuotaStatus{}
	r.Strategy.PrepareForUpdate(context.Background(), upd, st)
	if upd.Status.Used.Pods().String() != "3" {
		t.Errorf("main update dropped status: %v", upd.Status)
	}
}

func TestTable(t *testing.T) {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", CreationTimestamp: metav1.NewTime(now.Add(-20 * time.Second))},
		Spec:       corev1.ResourceQuotaSpec{Hard: list("pods", "10", "requests.cpu", "4", "limits.cpu", "8", "limits.memory", "8Gi")},
		Status: corev1.ResourceQuotaStatus{
			Hard: list("pods", "10", "requests.cpu", "4", "limits.cpu", "8", "limits.memory", "8Gi"),
			Used: list("pods", "2", "requests.cpu", "500m"),
		},
	}
	cells, err := Resource(clocktesting.NewFakePassiveClock(now)).Table.Cells(q)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"compute", "20s", "pods: 2/10, requests.cpu: 500m/4", "limits.cpu: 0/8, limits.memory: 0/8Gi"}
	if !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %q\nwant    %q", cells, want)
	}
}
