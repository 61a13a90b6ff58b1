package replicaset

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newRS returns a replicaset as a client would send it, defaulted as the
// handler would after decoding.
func newRS(mutate ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "7"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "nginx", Image: "nginx:1.27"},
					{Name: "sidecar", Image: "busybox"},
				}},
			},
		},
	}
	for _, m := range mutate {
		m(rs)
	}
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Default(rs)
	return rs
}

func TestDefault(t *testing.T) {
	rs := newRS()
	if got := ptr.Deref(rs.Spec.Replicas, -1); got != 1 {
		t.Errorf("spec.replicas = %d, want 1", got)
	}
	pod := rs.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyAlways || pod.DNSPolicy != corev1.DNSClusterFirst ||
		pod.SchedulerName != corev1.DefaultSchedulerName || ptr.Deref(pod.TerminationGracePeriodSeconds, 0) != 30 {
		t.Errorf("template spec not defaulted like upstream: %+v", pod)
	}
	if got := pod.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("tagged image pull policy = %q, want IfNotPresent", got)
	}
	if got := pod.Containers[1].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("untagged image pull policy = %q, want Always", got)
	}

	explicit := newRS(func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](0) })
	if got := *explicit.Spec.Replicas; got != 0 {
		t.Errorf("explicit replicas 0 defaulted to %d", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.ReplicaSet)
		want   []string // field paths of the errors, in order
	}{
		{name: "valid", mutate: func(*appsv1.ReplicaSet) {}},
		{name: "negative replicas", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](-1) }, want: []string{"spec.replicas"}},
		{name: "no selector", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil }, want: []string{"spec.selector"}},
		{name: "empty selector", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} }, want: []string{"spec.selector"}},
		{name: "selector does not match template", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector.MatchLabels = map[string]string{"app": "db"}
		}, want: []string{"spec.template.metadata.labels"}},
		{name: "no containers", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.Containers = nil }, want: []string{"spec.template.spec.containers"}},
		{name: "container without name or image", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.Containers[1] = corev1.Container{}
		}, want: []string{"spec.template.spec.containers[1].name", "spec.template.spec.containers[1].image"}},
		{name: "duplicate container name", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.Containers[1].Name = "nginx"
		}, want: []string{"spec.template.spec.containers[1].name"}},
		{name: "container name not a DNS label", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.Containers[0].Name = "Nginx_1"
		}, want: []string{"spec.template.spec.containers[0].name"}},
		{name: "restartPolicy Never", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}, want: []string{"spec.template.spec.restartPolicy"}},
		{name: "activeDeadlineSeconds", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
		}, want: []string{"spec.template.spec.activeDeadlineSeconds"}},
		{name: "port out of range", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
		}, want: []string{"spec.template.spec.containers[0].ports[0].containerPort"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS(tt.mutate)
			r := Resource(clocktesting.NewFakePassiveClock(now))
			r.Strategy.PrepareForCreate(context.Background(), rs)
			assertFields(t, r.Strategy.Validate(context.Background(), rs), tt.want)
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	rs := newRS(func(rs *appsv1.ReplicaSet) {
		rs.Generation = 9
		rs.Status = appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 3}
	})
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.PrepareForCreate(context.Background(), rs)
	if rs.Generation != 1 {
		t.Errorf("generation = %d, want 1", rs.Generation)
	}
	if !apiequality.Semantic.DeepEqual(rs.Status, appsv1.ReplicaSetStatus{}) {
		t.Errorf("status not cleared on create: %+v", rs.Status)
	}
}

func TestUpdate(t *testing.T) {
	stored := newRS(func(rs *appsv1.ReplicaSet) {
		rs.Generation = 4
		rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1, ObservedGeneration: 4}
	})
	tests := []struct {
		name       string
		mutate     func(*appsv1.ReplicaSet)
		generation int64
		want       []string
	}{
		{name: "labels only", mutate: func(rs *appsv1.ReplicaSet) { rs.Labels = map[string]string{"x": "y"} }, generation: 4},
		{name: "status ignored", mutate: func(rs *appsv1.ReplicaSet) { rs.Status.Replicas = 9; rs.Generation = 100 }, generation: 4},
		{name: "scale", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](5) }, generation: 5},
		{name: "selector immutable", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector.MatchLabels["tier"] = "front"
		}, generation: 5, want: []string{"spec.selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resource(clocktesting.NewFakePassiveClock(now))
			obj := stored.DeepCopy()
			tt.mutate(obj)
			r.Strategy.PrepareForUpdate(context.Background(), obj, stored)
			if obj.Generation != tt.generation {
				t.Errorf("generation = %d, want %d", obj.Generation, tt.generation)
			}
			if !apiequality.Semantic.DeepEqual(obj.Status, stored.Status) {
				t.Errorf("main endpoint changed status to %+v", obj.Status)
			}
			assertFields(t, r.Strategy.ValidateUpdate(context.Background(), obj, stored), tt.want)
		})
	}
}

func TestStatusUpdate(t *testing.T) {
	stored := newRS(func(rs *appsv1.ReplicaSet) { rs.Generation = 2 })
	tests := []struct {
		name   string
		status appsv1.ReplicaSetStatus
		want   []string
	}{
		{name: "valid", status: appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2}},
		{name: "negative observedGeneration", status: appsv1.ReplicaSetStatus{ObservedGeneration: -1}, want: []string{"status.observedGeneration"}},
		{name: "ready above replicas", status: appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 2}, want: []string{"status.readyReplicas"}},
		{name: "in upstream's order", status: appsv1.ReplicaSetStatus{AvailableReplicas: -1, ObservedGeneration: -1, TerminatingReplicas: ptr.To[int32](-1)},
			want: []string{"status.availableReplicas", "status.observedGeneration", "status.terminatingReplicas"}},
		{name: "available above ready", status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2}, want: []string{"status.availableReplicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resource(clocktesting.NewFakePassiveClock(now))
			obj := stored.DeepCopy()
			obj.Status = tt.status
			obj.Spec.Replicas = ptr.To[int32](42)
			r.Status.PrepareForUpdate(context.Background(), obj, stored)
			if !apiequality.Semantic.DeepEqual(obj.Spec, stored.Spec) {
				t.Errorf("status endpoint changed spec: replicas %d", *obj.Spec.Replicas)
			}
			if !apiequality.Semantic.DeepEqual(obj.Status, tt.status) {
				t.Errorf("status = %+v, want %+v", obj.Status, tt.status)
			}
			assertFields(t, r.Status.ValidateUpdate(context.Background(), obj, stored), tt.want)
		})
	}
}

func TestScale(t *testing.T) {
	rs := newRS(func(rs *appsv1.ReplicaSet) {
		rs.Spec.Replicas = ptr.To[int32](3)
		rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}
		rs.Status.Replicas = 2
	})
	s := Resource(clocktesting.NewFakePassiveClock(now)).Scale
	spec, status, selector := s.Scale(rs)
	if spec != 3 || status != 2 || selector != "app=web,tier in (front)" {
		t.Errorf("Scale = %d, %d, %q; want 3, 2, %q", spec, status, selector, "app=web,tier in (front)")
	}
	s.SetReplicas(rs, 0)
	if spec, _, _ := s.Scale(rs); spec != 0 {
		t.Errorf("after SetReplicas(0) spec replicas = %d", spec)
	}
}

func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	rs := newRS(func(rs *appsv1.ReplicaSet) {
		rs.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
		rs.Spec.Replicas = ptr.To[int32](3)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}
	})
	cols := r.Table.Columns()
	var names []string
	for _, c := range cols {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	if got, want := names, []string{"Name", "Desired", "Current", "Ready", "Age"}; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("columns = %v, want %v", got, want)
	}
	cells, err := r.Table.Cells(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"web", int64(3), int64(3), int64(2), "3h", "nginx,sidecar", "nginx:1.27,busybox", "app=web"}
	if !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, want %#v", cells, want)
	}
	if len(cells) != len(cols) {
		t.Errorf("%d cells for %d columns", len(cells), len(cols))
	}
	rs.CreationTimestamp = metav1.Time{}
	if cells, _ := r.Table.Cells(rs); cells[4] != "<unknown>" {
		t.Errorf("age without creationTimestamp = %v", cells[4])
	}
}

func assertFields(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if len(got) != len(want) {
		t.Fatalf("errors at %v, want %v (%v)", got, want, errs)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("errors at %v, want %v (%v)", got, want, errs)
		}
	}
}
