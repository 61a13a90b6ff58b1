package resourcequota

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// fakeStore keeps quotas and objects of one namespace; updates are
// serialized as the storage's compare-and-swap would make them.
type fakeStore struct {
	mu      sync.Mutex
	quotas  map[string]*corev1.ResourceQuota
	objects map[schema.GroupResource][]runtime.Object
}

func (f *fakeStore) ListResourceQuotas(context.Context, string) ([]corev1.ResourceQuota, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []corev1.ResourceQuota
	for _, q := range f.quotas {
		out = append(out, *q.DeepCopy())
	}
	return out, nil
}

func (f *fakeStore) UpdateResourceQuota(_ context.Context, _, name string, update func(*corev1.ResourceQuota) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.quotas[name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "resourcequotas"}, name)
	}
	c := q.DeepCopy()
	if err := update(c); err != nil {
		return err
	}
	f.quotas[name] = c
	return nil
}

func (f *fakeStore) ListObjects(_ context.Context, gr schema.GroupResource, _ string) ([]runtime.Object, error) {
	return f.objects[gr], nil
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func quota(name string, hard corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
}

var (
	podsRes       = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Namespaced: true}
	configmapsRes = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "configmaps", Namespaced: true}
	deployRes     = &registry.Resource{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Name: "deployments", Namespaced: true}
)

func pod(name string, req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}}}
}

func withInit(p *corev1.Pod, name string, req, lim corev1.ResourceList) *corev1.Pod {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}})
	return p
}

func podLevel(p *corev1.Pod, req corev1.ResourceList) *corev1.Pod {
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: req}
	return p
}

func create(p *Plugin, res *registry.Resource, obj runtime.Object) error {
	m, _ := obj.(metav1.Object)
	return p.Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: res, Namespace: "ns", Name: m.GetName(), Object: obj})
}

func TestConcurrentCreatesStopAtHard(t *testing.T) {
	f := &fakeStore{quotas: map[string]*corev1.ResourceQuota{"q": quota("q", rl("pods", "3"))}}
	p := New(f, f)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := create(p, podsRes, pod(string(rune('a'+i)), nil, nil))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				admitted++
			} else if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3") {
				refused++
			} else {
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	if admitted != 3 || refused != 7 {
		t.Fatalf("admitted %d, refused %d; want 3 and 7", admitted, refused)
	}
	if u := f.quotas["q"].Status.Used["pods"]; u.String() != "3" {
		t.Errorf("status.used.pods = %s, want 3", u.String())
	}
}

func TestCharges(t *testing.T) {
	tests := []struct {
		name     string
		hard     corev1.ResourceList
		existing map[schema.GroupResource][]runtime.Object
		res      *registry.Resource
		obj      runtime.Object
		wantErr  string
		wantUsed corev1.ResourceList
	}{
		{"cpu and memory requests", rl("requests.cpu", "1", "limits.memory", "1Gi"), nil, podsRes,
			pod("p", rl("cpu", "300m"), rl("memory", "256Mi")), "", rl("requests.cpu", "300m", "limits.memory", "256Mi")},
		{"cpu over", rl("cpu", "1"), nil, podsRes, pod("p", rl("cpu", "2"), nil),
			`pods "p" is forbidden: exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1`, rl("cpu", "0")},
		{"request missing", rl("requests.memory", "1Gi"), nil, podsRes, pod("p", nil, nil),
			`failed quota: q: must specify requests.memory for: c`, nil},
		{"requests and limits missing, per resource and container", rl("cpu", "1", "limits.cpu", "2"), nil, podsRes,
			withInit(pod("p", rl("cpu", "100m"), nil), "a-init", nil, nil),
			`pods "p" is forbidden: failed quota: q: must specify cpu for: a-init; limits.cpu for: a-init,c`, nil},
		{"pod-level resources make container ones optional", rl("cpu", "1"), nil, podsRes,
			podLevel(pod("p", nil, nil), rl("cpu", "500m")), "", rl("cpu", "500m")},
		{"existing objects count", rl("count/configmaps", "2"), map[schema.GroupResource][]runtime.Object{
			{Resource: "configmaps"}: {&corev1.ConfigMap{}, &corev1.ConfigMap{}}}, configmapsRes,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
			`exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2`, nil},
		{"legacy name", rl("configmaps", "1"), nil, configmapsRes, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, "", rl("configmaps", "1")},
		{"group resource count", rl("count/deployments.apps", "1"), nil, deployRes, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, "", rl("count/deployments.apps", "1")},
		{"unrelated resource", rl("pods", "0"), nil, configmapsRes, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStore{quotas: map[string]*corev1.ResourceQuota{"q": quota("q", tt.hard)}, objects: tt.existing}
			err := create(New(f, f), tt.res, tt.obj)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.wantErr != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want Forbidden with %q", err, tt.wantErr)
			}
			used := f.quotas["q"].Status.Used
			for k, v := range tt.wantUsed {
				if got := used[k]; got.Cmp(v) != 0 {
					t.Errorf("used %s = %s, want %s", k, got.String(), v.String())
				}
			}
		})
	}
}

func TestRelease(t *testing.T) {
	now := metav1.Now()
	running := pod("p", nil, nil)
	done := running.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	deleting := running.DeepCopy()
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name     string
		op       admission.Operation
		obj, old runtime.Object
		wantUsed string
	}{
		{"delete releases", admission.Delete, nil, running, "1"},
		{"second delete of a terminating pod releases nothing", admission.Delete, nil, deleting, "2"},
		{"finishing releases", admission.Update, done, running, "1"},
		{"ordinary update keeps", admission.Update, running, running, "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := quota("q", rl("pods", "5"))
			q.Status.Used = rl("pods", "2")
			f := &fakeStore{quotas: map[string]*corev1.ResourceQuota{"q": q}}
			a := &admission.Attributes{Operation: tt.op, Resource: podsRes, Namespace: "ns", Name: "p", Object: tt.obj, OldObject: tt.old}
			if err := New(f, f).Validate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if got := f.quotas["q"].Status.Used["pods"]; got.String() != tt.wantUsed {
				t.Errorf("used pods = %s, want %s", got.String(), tt.wantUsed)
			}
		})
	}
}

func TestRefusalUndoesEarlierCharges(t *testing.T) {
	f := &fakeStore{quotas: map[string]*corev1.ResourceQuota{
		"a-roomy": quota("a-roomy", rl("pods", "10")),
		"b-tight": quota("b-tight", rl("pods", "0")),
	}}
	if err := create(New(f, f), podsRes, pod("p", nil, nil)); !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want Forbidden", err)
	}
	if got := f.quotas["a-roomy"].Status.Used["pods"]; !got.IsZero() {
		t.Errorf("a-roomy used %s after the refusal, want 0", got.String())
	}
}

func TestDryRunChecksWithoutCharging(t *testing.T) {
	q := quota("q", rl("pods", "1"))
	q.Status.Used = rl("pods", "0")
	f := &fakeStore{quotas: map[string]*corev1.ResourceQuota{"q": q}}
	dry := func() error {
		return New(f, f).Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsRes,
			Namespace: "ns", Name: "p", Object: pod("p", nil, nil), DryRun: true})
	}
	if err := dry(); err != nil {
		t.Fatalf("dry run within the quota refused: %v", err)
	}
	if got := f.quotas["q"].Status.Used["pods"]; !got.IsZero() {
		t.Fatalf("dry run charged: used %s", got.String())
	}
	f.quotas["q"].Status.Used = rl("pods", "1")
	if err := dry(); !apierrors.IsForbidden(err) {
		t.Fatalf("dry run over the quota: %v, want Forbidden", err)
	}
}

func TestDryRunRefusalLeavesOtherQuotas(t *testing.T) {
	roomy := quota("a-roomy", rl("pods", "10"))
	roomy.Status.Used = rl("pods", "4")
	f := &fakeStore{quotas: map[string]*corev1.ResourceQuota{"a-roomy": roomy, "b-tight": quota("b-tight", rl("pods", "0"))}}
	err := New(f, f).Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsRes,
		Namespace: "ns", Name: "p", Object: pod("p", nil, nil), DryRun: true})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want Forbidden", err)
	}
	if got := f.quotas["a-roomy"].Status.Used["pods"]; got.String() != "4" {
		t.Errorf("a-roomy used %s after a refused dry run, want 4", got.String())
	}
}
