package deployment

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func resource() *registry.Resource { return Resource(clocktesting.NewFakePassiveClock(now)) }

// newDeployment returns a deployment as a client would send it, defaulted as
// the handler would after decoding.
func newDeployment(mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "nginx", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}}},
					{Name: "sidecar", Image: "busybox:latest"},
				}},
			},
		},
	}
	for _, m := range mutate {
		m(d)
	}
	resource().Strategy.Default(d)
	return d
}

func TestDefault(t *testing.T) {
	d := newDeployment()
	want := appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Strategy: appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")),
				MaxSurge:       ptr.To(intstr.FromString("25%")),
			},
		},
		RevisionHistoryLimit:    ptr.To[int32](10),
		ProgressDeadlineSeconds: ptr.To[int32](600),
	}
	got := d.Spec
	got.Selector, got.Template = nil, corev1.PodTemplateSpec{}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	pod := d.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyAlways || pod.DNSPolicy != corev1.DNSClusterFirst ||
		pod.SchedulerName != corev1.DefaultSchedulerName || ptr.Deref(pod.TerminationGracePeriodSeconds, 0) != 30 ||
		pod.SecurityContext == nil {
		t.Errorf("template spec not defaulted like upstream: %+v", pod)
	}
	c := pod.Containers[0]
	if c.ImagePullPolicy != corev1.PullIfNotPresent || c.TerminationMessagePath != "/dev/termination-log" ||
		c.TerminationMessagePolicy != corev1.TerminationMessageReadFile || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("container not defaulted like upstream: %+v", c)
	}
	if got := pod.Containers[1].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf(":latest image pull policy = %q, want Always", got)
	}

	recreate := newDeployment(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType })
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate got rollingUpdate defaults: %+v", recreate.Spec.Strategy.RollingUpdate)
	}
	partial := newDeployment(func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0))}
	})
	if ru := partial.Spec.Strategy.RollingUpdate; ru.MaxSurge.IntValue() != 0 || ru.MaxUnavailable.String() != "25%" {
		t.Errorf("partial rollingUpdate defaulted to %+v", ru)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{name: "valid", mutate: func(*appsv1.Deployment) {}},
		{name: "negative replicas", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }, want: []string{"spec.replicas"}},
		{name: "no selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil }, want: []string{"spec.selector"}},
		{name: "empty selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, want: []string{"spec.selector"}},
		{name: "bad selector operator", mutate: func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}, want: []string{"spec.selector.matchExpressions[0].operator"}},
		{name: "selector does not match template", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Labels = map[string]string{"app": "other"}
		}, want: []string{"spec.template.metadata.labels"}},
		{name: "no containers", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }, want: []string{"spec.template.spec.containers"}},
		{name: "container without image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }, want: []string{"spec.template.spec.containers[0].image"}},
		{name: "restartPolicy OnFailure", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}, want: []string{"spec.template.spec.restartPolicy"}},
		{name: "Recreate with rollingUpdate", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, want: []string{"spec.strategy.rollingUpdate"}},
		{name: "unknown strategy", mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, want: []string{"spec.strategy"}},
		{name: "maxSurge and maxUnavailable both 0", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("0%")), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			}
		}, want: []string{"spec.strategy.rollingUpdate.maxUnavailable"}},
		{name: "maxUnavailable over 100%", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromString("150%"))}
		}, want: []string{"spec.strategy.rollingUpdate.maxUnavailable"}},
		{name: "maxSurge not a percentage", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("many"))}
		}, want: []string{"spec.strategy.rollingUpdate.maxSurge"}},
		{name: "negative maxSurge", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(-1))}
		}, want: []string{"spec.strategy.rollingUpdate.maxSurge"}},
		{name: "progress deadline not above minReadySeconds", mutate: func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 600
		}, want: []string{"spec.progressDeadlineSeconds"}},
		{name: "negative revisionHistoryLimit", mutate: func(d *appsv1.Deployment) {
			d.Spec.RevisionHistoryLimit = ptr.To[int32](-2)
		}, want: []string{"spec.revisionHistoryLimit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(tt.mutate)
			r := resource()
			r.Strategy.PrepareForCreate(context.Background(), d)
			assertFields(t, r.Strategy.Validate(context.Background(), d), tt.want)
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	d := newDeployment(func(d *appsv1.Deployment) {
		d.Generation = 3
		d.Status = appsv1.DeploymentStatus{Replicas: 3, ObservedGeneration: 3}
	})
	resource().Strategy.PrepareForCreate(context.Background(), d)
	if d.Generation != 1 {
		t.Errorf("generation = %d, want 1", d.Generation)
	}
	if !apiequality.Semantic.DeepEqual(d.Status, appsv1.DeploymentStatus{}) {
		t.Errorf("status not cleared on create: %+v", d.Status)
	}
}

func TestUpdate(t *testing.T) {
	stored := newDeployment(func(d *appsv1.Deployment) {
		d.Generation = 2
		d.Annotations = map[string]string{"team": "a"}
		d.Status = appsv1.DeploymentStatus{Replicas: 1, ObservedGeneration: 2}
	})
	tests := []struct {
		name       string
		mutate     func(*appsv1.Deployment)
		generation int64
		want       []string
	}{
		{name: "labels only", mutate: func(d *appsv1.Deployment) { d.Labels = map[string]string{"x": "y"} }, generation: 2},
		{name: "client-set generation and status ignored", mutate: func(d *appsv1.Deployment) {
			d.Generation = 40
			d.Status.Replicas = 7
		}, generation: 2},
		{name: "annotations bump generation as upstream", mutate: func(d *appsv1.Deployment) { d.Annotations["team"] = "b" }, generation: 3},
		{name: "new image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" }, generation: 3},
		{name: "selector immutable", mutate: func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
			d.Spec.Template.Labels["v"] = "2"
		}, generation: 3, want: []string{"spec.selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
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
	stored := newDeployment(func(d *appsv1.Deployment) {
		d.Generation = 2
		d.Labels = map[string]string{"app": "web"}
		d.Status.CollisionCount = ptr.To[int32](2)
	})
	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   []string
	}{
		{name: "valid", status: appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2, CollisionCount: ptr.To[int32](2)}},
		{name: "updated above replicas", status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 2, CollisionCount: ptr.To[int32](2)}, want: []string{"status.updatedReplicas"}},
		{name: "available above ready", status: appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2, CollisionCount: ptr.To[int32](3)}, want: []string{"status.availableReplicas"}},
		{name: "negative unavailable", status: appsv1.DeploymentStatus{UnavailableReplicas: -1, CollisionCount: ptr.To[int32](2)}, want: []string{"status.unavailableReplicas"}},
		{name: "collisionCount decremented", status: appsv1.DeploymentStatus{CollisionCount: ptr.To[int32](1)}, want: []string{"status.collisionCount"}},
		{name: "collisionCount dropped", status: appsv1.DeploymentStatus{}, want: []string{"status.collisionCount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
			obj := stored.DeepCopy()
			obj.Status = tt.status
			obj.Spec.Replicas = ptr.To[int32](42)
			obj.Labels = map[string]string{"app": "changed"}
			r.Status.PrepareForUpdate(context.Background(), obj, stored)
			if !apiequality.Semantic.DeepEqual(obj.Spec, stored.Spec) {
				t.Errorf("status endpoint changed spec: replicas %d", *obj.Spec.Replicas)
			}
			if obj.Labels["app"] != "web" {
				t.Errorf("status endpoint changed labels to %v", obj.Labels)
			}
			if !apiequality.Semantic.DeepEqual(obj.Status, tt.status) {
				t.Errorf("status = %+v, want %+v", obj.Status, tt.status)
			}
			assertFields(t, r.Status.ValidateUpdate(context.Background(), obj, stored), tt.want)
		})
	}
}

func TestScale(t *testing.T) {
	d := newDeployment(func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](4)
		d.Status.Replicas = 5
	})
	s := resource().Scale
	if spec, status, selector := s.Scale(d); spec != 4 || status != 5 || selector != "app=web" {
		t.Errorf("Scale = %d, %d, %q; want 4, 5, app=web", spec, status, selector)
	}
	s.SetReplicas(d, 10)
	if got := *d.Spec.Replicas; got != 10 {
		t.Errorf("after SetReplicas(10) spec.replicas = %d", got)
	}
}

func TestTable(t *testing.T) {
	r := resource()
	d := newDeployment(func(d *appsv1.Deployment) {
		d.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
		d.Spec.Replicas = ptr.To[int32](3)
		d.Status = appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1}
	})
	var names, wide []string
	for _, c := range r.Table.Columns() {
		if c.Priority == 0 {
			names = append(names, c.Name)
		} else {
			wide = append(wide, c.Name)
		}
	}
	if want := []string{"Name", "Ready", "Up-to-date", "Available", "Age"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if want := []string{"Containers", "Images", "Selector"}; !apiequality.Semantic.DeepEqual(wide, want) {
		t.Errorf("wide columns = %v, want %v", wide, want)
	}
	cells, err := r.Table.Cells(d)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"web", "2/3", int64(3), int64(1), "90s", "nginx,sidecar", "nginx:1.27,busybox:latest", "app=web"}
	if !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, want %#v", cells, want)
	}
}

func assertFields(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("errors at %v, want %v (%v)", got, want, errs)
	}
}

// An unknown strategy type shows upstream's whole strategy as the value.
func TestUnknownStrategyAsUpstream(t *testing.T) {
	s := &appsv1.DeploymentStrategy{Type: "Bogus"}
	errs := validateStrategy(s, field.NewPath("spec", "strategy"))
	const want = `spec.strategy: Unsupported value: {"Type":"Bogus","RollingUpdate":null}: supported values: "Recreate", "RollingUpdate"`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors = %v, want %q", errs, want)
	}
}
