package deployment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newDeployment(replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

// cluster is a fake apiserver plus a stand-in for the ReplicaSet controller:
// after each deployment sync, a ReplicaSet's pods become available one step
// after it was scaled up, so a rollout takes several steps as in life.
type cluster struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	ctrl     *Controller
	clock    *clocktesting.FakeClock
	prevSpec map[string]int32
}

func newCluster(t *testing.T, d *appsv1.Deployment) *cluster {
	t.Helper()
	client := controllertest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(now)
	c := &cluster{t: t, client: client, factory: f, clock: clk, prevSpec: map[string]int32{},
		ctrl: New(client, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), nil, clk)}
	if _, err := client.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.refresh()
	return c
}

// refresh copies the fake server's state into the informer caches.
func (c *cluster) refresh() {
	ctx := context.Background()
	ds, _ := c.client.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
	rss, _ := c.client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	var dObjs, rsObjs []any
	for i := range ds.Items {
		dObjs = append(dObjs, &ds.Items[i])
	}
	for i := range rss.Items {
		rsObjs = append(rsObjs, &rss.Items[i])
	}
	_ = c.factory.Apps().V1().Deployments().Informer().GetIndexer().Replace(dObjs, "")
	_ = c.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Replace(rsObjs, "")
}

func (c *cluster) sync() {
	c.t.Helper()
	if err := c.ctrl.sync(context.Background(), "default/web"); err != nil {
		c.t.Fatalf("sync: %v", err)
	}
	c.refresh()
}

// settle plays the ReplicaSet controller for one step.
func (c *cluster) settle() {
	ctx := context.Background()
	rss, _ := c.client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	for i := range rss.Items {
		rs := &rss.Items[i]
		spec := *rs.Spec.Replicas
		avail := min(spec, c.prevSpec[rs.Name])
		c.prevSpec[rs.Name] = spec
		rs.Status = appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: avail, AvailableReplicas: avail, ObservedGeneration: rs.Generation}
		if _, err := c.client.AppsV1().ReplicaSets("default").UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
	c.refresh()
}

func (c *cluster) deployment() *appsv1.Deployment {
	d, err := c.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

func (c *cluster) update(f func(d *appsv1.Deployment)) {
	d := c.deployment()
	f(d)
	d.Generation++
	if _, err := c.client.AppsV1().Deployments("default").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.refresh()
}

func (c *cluster) replicaSets() []*appsv1.ReplicaSet {
	rss, err := c.ctrl.rsLister.ReplicaSets("default").List(labels.Everything())
	if err != nil {
		c.t.Fatal(err)
	}
	byCreation(rss)
	return rss
}

// sizes is "image=replicas" per ReplicaSet, ordered by revision.
func (c *cluster) sizes() string {
	rss := c.replicaSets()
	sortByRevision(rss)
	s := ""
	for _, rs := range rss {
		s += fmt.Sprintf("%s@%s=%d ", rs.Spec.Template.Spec.Containers[0].Image, rs.Annotations[RevisionAnnotation], *rs.Spec.Replicas)
	}
	return s
}

// rollOut runs steps until the deployment is complete, checking the bounds
// after every step.
func (c *cluster) rollOut(maxTotal, minAvailable int32) {
	c.t.Helper()
	for step := 0; step < 50; step++ {
		c.sync()
		var total, avail int32
		for _, rs := range c.replicaSets() {
			total += *rs.Spec.Replicas
			avail += min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
		}
		if total > maxTotal {
			c.t.Fatalf("step %d: %d replicas requested, above the bound %d: %s", step, total, maxTotal, c.sizes())
		}
		if avail < minAvailable && step > 0 {
			c.t.Fatalf("step %d: %d available, below the bound %d: %s", step, avail, minAvailable, c.sizes())
		}
		c.settle()
		d := c.deployment()
		if complete(d, &d.Status) {
			return
		}
	}
	c.t.Fatalf("rollout did not complete: %s status %+v", c.sizes(), c.deployment().Status)
}

func TestRollingUpdate(t *testing.T) {
	tests := []struct {
		name                       string
		replicas                   int32
		surge, unavail             intstr.IntOrString
		wantMaxTotal, wantMinAvail int32
	}{
		{"surge 1 unavailable 1", 5, intstr.FromInt32(1), intstr.FromInt32(1), 6, 4},
		{"surge only", 5, intstr.FromInt32(2), intstr.FromInt32(0), 7, 5},
		{"unavailable only", 4, intstr.FromInt32(0), intstr.FromInt32(2), 4, 2},
		{"percentages round surge up and unavailable down", 10, intstr.FromString("25%"), intstr.FromString("25%"), 13, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(tt.replicas, "v1")
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &tt.surge, MaxUnavailable: &tt.unavail}
			c := newCluster(t, d)
			c.rollOut(tt.replicas, 0)
			if got, want := c.sizes(), fmt.Sprintf("v1@1=%d ", tt.replicas); got != want {
				t.Fatalf("after first rollout: %s, want %s", got, want)
			}
			c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
			c.rollOut(tt.wantMaxTotal, tt.wantMinAvail)
			if got, want := c.sizes(), fmt.Sprintf("v1@1=0 v2@2=%d ", tt.replicas); got != want {
				t.Fatalf("after update: %s, want %s", got, want)
			}
			dep := c.deployment()
			if dep.Annotations[RevisionAnnotation] != "2" {
				t.Errorf("deployment revision %q, want 2", dep.Annotations[RevisionAnnotation])
			}
			st := dep.Status
			if st.Replicas != tt.replicas || st.UpdatedReplicas != tt.replicas || st.AvailableReplicas != tt.replicas || st.ObservedGeneration != dep.Generation {
				t.Errorf("status %+v", st)
			}
			if p := getCondition(&st, appsv1.DeploymentProgressing); p == nil || p.Reason != reasonNewRSAvailable || p.Status != corev1.ConditionTrue {
				t.Errorf("Progressing condition %+v, want NewReplicaSetAvailable", p)
			}
			if a := getCondition(&st, appsv1.DeploymentAvailable); a == nil || a.Status != corev1.ConditionTrue {
				t.Errorf("Available condition %+v, want True", a)
			}
		})
	}
}

func TestRollbackReusesOldReplicaSetWithNewRevision(t *testing.T) {
	c := newCluster(t, newDeployment(3, "v1"))
	c.rollOut(3, 0)
	c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	c.rollOut(4, 2)
	c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v1" })
	c.rollOut(4, 2)
	if got, want := c.sizes(), "v2@2=0 v1@3=3 "; got != want {
		t.Fatalf("after undo: %s, want %s", got, want)
	}
	if got := c.deployment().Annotations[RevisionAnnotation]; got != "3" {
		t.Errorf("deployment revision %q, want 3", got)
	}
	// As upstream, the reused ReplicaSet remembers the revisions it was.
	c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	c.rollOut(4, 2)
	c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v1" })
	c.rollOut(4, 2)
	for _, rs := range c.replicaSets() {
		want := map[string]string{"v1": "1,3", "v2": "2"}[rs.Spec.Template.Spec.Containers[0].Image]
		if got := rs.Annotations[revisionHistoryAnnotation]; got != want {
			t.Errorf("%s revision-history %q, want %q", rs.Name, got, want)
		}
	}
}

func TestRecreateScalesOldToZeroFirst(t *testing.T) {
	d := newDeployment(3, "v1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	c := newCluster(t, d)
	c.rollOut(3, 0)
	c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	c.sync()
	if got, want := c.sizes(), "v1@1=0 "; got != want {
		t.Fatalf("first step: %s, want %s", got, want)
	}
	// The old pods are still there until the ReplicaSet reports none.
	c.sync()
	if got, want := c.sizes(), "v1@1=0 "; got != want {
		t.Fatalf("while old pods run: %s, want %s", got, want)
	}
	c.settle()
	c.rollOut(3, 0)
	if got, want := c.sizes(), "v1@1=0 v2@2=3 "; got != want {
		t.Fatalf("done: %s, want %s", got, want)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	d := newDeployment(1, "v0")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	c := newCluster(t, d)
	c.rollOut(1, 0)
	for i := 1; i <= 3; i++ {
		c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("v%d", i) })
		c.rollOut(2, 0)
		c.sync() // cleanup runs once the rollout is complete
	}
	if got, want := c.sizes(), "v2@3=0 v3@4=1 "; got != want {
		t.Fatalf("kept %s, want %s", got, want)
	}
}

func TestPausedDeploymentScalesButDoesNotRollOut(t *testing.T) {
	c := newCluster(t, newDeployment(2, "v1"))
	c.rollOut(2, 0)
	c.update(func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "v2"
		d.Spec.Replicas = ptr.To[int32](4)
	})
	c.sync() // records the pause
	c.sync()
	c.settle()
	c.sync()
	if got, want := c.sizes(), "v1@1=4 "; got != want {
		t.Fatalf("paused: %s, want %s", got, want)
	}
	if p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing); p == nil || p.Reason != reasonPaused {
		t.Errorf("Progressing %+v, want DeploymentPaused", p)
	}
	c.update(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	c.rollOut(5, 3)
	if got, want := c.sizes(), "v1@1=0 v2@2=4 "; got != want {
		t.Fatalf("resumed: %s, want %s", got, want)
	}
}

func TestPausedDeploymentTrimsHistory(t *testing.T) {
	d := newDeployment(1, "v1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32) // no Progressing condition
	c := newCluster(t, d)
	c.rollOut(1, 0)
	for _, image := range []string{"v2", "v3"} {
		c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
		c.rollOut(2, 0)
	}
	c.update(func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "v4" // not rolled out while paused
		d.Spec.RevisionHistoryLimit = ptr.To[int32](0)
	})
	c.sync()
	if got, want := c.sizes(), "v3@3=1 "; got != want {
		t.Fatalf("kept %s, want %s", got, want)
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	d := newDeployment(2, "v1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	c := newCluster(t, d)
	c.sync() // creates the ReplicaSet; its pods never become available
	c.clock.Step(2 * time.Minute)
	c.sync()
	p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing)
	if p == nil || p.Reason != reasonTimedOut || p.Status != corev1.ConditionFalse {
		t.Fatalf("Progressing %+v, want False/ProgressDeadlineExceeded", p)
	}
}

func TestAdoptsOrphanReplicaSet(t *testing.T) {
	d := newDeployment(2, "v1")
	hash := templateHash(&d.Spec.Template, nil)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "default", UID: "rs-uid", Labels: withLabel(d.Spec.Template.Labels, hash)},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: withLabel(d.Spec.Selector.MatchLabels, hash)},
			Template: *d.Spec.Template.DeepCopy()},
	}
	rs.Spec.Template.Labels = withLabel(rs.Spec.Template.Labels, hash)
	c := newCluster(t, d)
	if _, err := c.client.AppsV1().ReplicaSets("default").Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.refresh()
	c.sync()
	rss := c.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("%d replicasets, want the adopted one only", len(rss))
	}
	if ref := metav1.GetControllerOf(rss[0]); ref == nil || ref.UID != d.UID {
		t.Fatalf("owner %v, want the deployment", ref)
	}
}

var _ runtime.Object = (*appsv1.Deployment)(nil)

func TestScaleDuringRollout(t *testing.T) {
	tests := []struct {
		name     string
		to       int32
		maxTotal int32
	}{
		{name: "up", to: 10, maxTotal: 11},
		{name: "down", to: 2, maxTotal: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, newDeployment(5, "v1"))
			c.rollOut(5, 0)
			c.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
			for range 2 {
				c.sync()
				c.settle()
			}
			c.update(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(tt.to) })
			c.rollOut(tt.maxTotal, 0)
			if got, want := c.sizes(), fmt.Sprintf("v1@1=0 v2@2=%d ", tt.to); got != want {
				t.Fatalf("after scaling mid-rollout: %s, want %s", got, want)
			}
		})
	}
}

func TestNewReplicaSetWaitsForOldPodsToGo(t *testing.T) {
	d := newDeployment(5, "v2")
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	oldRS := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.ReplicaSetStatus{Replicas: 3}}
	newRS := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}, Status: appsv1.ReplicaSetStatus{Replicas: 3}}
	// Scaled down to 2 but still 3 pods: 6 pods already, the surge bound.
	if got := newRSReplicas(d, []*appsv1.ReplicaSet{oldRS, newRS}, newRS); got != 3 {
		t.Fatalf("new ReplicaSet may grow to %d while the old one still has 3 pods, want 3", got)
	}
	oldRS.Status.Replicas = 2
	if got := newRSReplicas(d, []*appsv1.ReplicaSet{oldRS, newRS}, newRS); got != 4 {
		t.Fatalf("new ReplicaSet may grow to %d once the old pod is gone, want 4", got)
	}
}

// TestStatusCountsTerminatingReplicas: status.terminatingReplicas is the sum
// over the ReplicaSets, unknown (absent) while a synced one does not report it.
func TestStatusCountsTerminatingReplicas(t *testing.T) {
	d := newDeployment(3, "v2")
	rs := func(name string, gen int64, terminating *int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: appsv1.ReplicaSetStatus{ObservedGeneration: gen, TerminatingReplicas: terminating}}
	}
	c := &Controller{clock: clocktesting.NewFakeClock(now)}
	cases := []struct {
		name string
		rss  []*appsv1.ReplicaSet
		want string
	}{
		{"all report", []*appsv1.ReplicaSet{rs("old", 1, ptr.To[int32](2)), rs("new", 1, ptr.To[int32](0))}, "2"},
		{"new one not synced yet", []*appsv1.ReplicaSet{rs("old", 1, ptr.To[int32](1)), rs("new", 0, nil)}, "1"},
		{"a synced one does not say", []*appsv1.ReplicaSet{rs("old", 1, nil), rs("new", 1, ptr.To[int32](0))}, "nil"},
	}
	for _, tc := range cases {
		st := c.calculateStatus(d, tc.rss, tc.rss[len(tc.rss)-1])
		got := "nil"
		if st.TerminatingReplicas != nil {
			got = fmt.Sprint(*st.TerminatingReplicas)
		}
		if got != tc.want {
			t.Errorf("%s: terminatingReplicas %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A rollout that timed out is not failed for ever: once its pods become
// available the Deployment says it completed, as upstream's does, and
// `kubectl rollout status` stops reporting the exceeded deadline.
func TestProgressDeadlineExceededRecovers(t *testing.T) {
	d := newDeployment(2, "v1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	c := newCluster(t, d)
	c.sync()
	c.clock.Step(2 * time.Minute)
	c.sync()
	if p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing); p == nil || p.Reason != reasonTimedOut {
		t.Fatalf("Progressing %+v, want ProgressDeadlineExceeded", p)
	}
	c.settle()
	c.settle()
	c.sync()
	p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing)
	if p == nil || p.Status != corev1.ConditionTrue || p.Reason != reasonNewRSAvailable {
		t.Fatalf("Progressing %+v, want True/NewReplicaSetAvailable", p)
	}
}

// Once complete, Progressing keeps NewReplicaSetAvailable while pods of the
// same template fail and come back; only a new rollout changes it.
func TestCompleteDeploymentStaysComplete(t *testing.T) {
	c := newCluster(t, newDeployment(3, "v1"))
	c.rollOut(4, 0)
	before := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing)
	if before == nil || before.Reason != reasonNewRSAvailable {
		t.Fatalf("Progressing %+v, want NewReplicaSetAvailable", before)
	}
	for _, avail := range []int32{1, 2} {
		rs := c.replicaSets()[0].DeepCopy()
		rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = avail, avail
		if _, err := c.client.AppsV1().ReplicaSets("default").UpdateStatus(context.Background(), rs, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.refresh()
		c.clock.Step(time.Second)
		c.sync()
		p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing)
		if p == nil || p.Reason != reasonNewRSAvailable || !p.LastUpdateTime.Equal(&before.LastUpdateTime) {
			t.Fatalf("%d available: Progressing %+v, want unchanged %+v", avail, p, before)
		}
	}
}

// Pausing a rollout that already exceeded its deadline keeps saying so.
func TestPauseKeepsProgressDeadlineExceeded(t *testing.T) {
	d := newDeployment(2, "v1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	c := newCluster(t, d)
	c.sync()
	c.clock.Step(2 * time.Minute)
	c.sync()
	c.update(func(d *appsv1.Deployment) { d.Spec.Paused = true })
	c.sync()
	c.sync()
	if p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing); p == nil || p.Reason != reasonTimedOut {
		t.Fatalf("Progressing %+v, want ProgressDeadlineExceeded", p)
	}
}

// A ReplicaSet the apiserver refuses shows in the Progressing condition and
// a Warning event, both worded as upstream's.
func TestReplicaSetCreateError(t *testing.T) {
	c := newCluster(t, newDeployment(2, "v1"))
	rec := record.NewFakeRecorder(10)
	c.ctrl.Events = rec
	c.client.PrependReactor("create", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web-x", errors.New("quota exceeded"))
	})
	if err := c.ctrl.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("sync succeeded, want the create error")
	}
	p := getCondition(&c.deployment().Status, appsv1.DeploymentProgressing)
	if p == nil || p.Status != corev1.ConditionFalse || p.Reason != reasonFailedCreate || !strings.HasPrefix(p.Message, "Failed to create new replica set \"web-") {
		t.Fatalf("Progressing %+v, want False/ReplicaSetCreateError \"Failed to create new replica set ...\"", p)
	}
	select {
	case e := <-rec.Events:
		if want := "Warning ReplicaSetCreateError " + p.Message; e != want {
			t.Errorf("event %q, want %q", e, want)
		}
	default:
		t.Error("no event")
	}
}

// The revision-history annotation stays within upstream's 2000 characters
// by dropping its oldest revisions.
func TestRevisionHistoryIsBounded(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	for i := 1; i <= 1000; i++ {
		recordRevisionHistory(rs, fmt.Sprint(i))
	}
	got := rs.Annotations[revisionHistoryAnnotation]
	if len(got) > revisionHistoryLimit || !strings.HasSuffix(got, ",999,1000") || strings.HasPrefix(got, "1,") {
		t.Errorf("revision-history of %d characters, %q...%q", len(got), got[:10], got[len(got)-10:])
	}
}
