package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newJob(mutate func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To[int32](2),
			Completions:  ptr.To[int32](3),
			BackoffLimit: ptr.To[int32](2),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelControllerUID: "job-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelControllerUID: "job-uid"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if mutate != nil {
		mutate(j)
	}
	return j
}

func pods(job *batchv1.Job, phases ...corev1.PodPhase) []*corev1.Pod {
	var out []*corev1.Pod
	for i, ph := range phases {
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("p%d", i)),
				Labels: job.Spec.Template.Labels, OwnerReferences: []metav1.OwnerReference{controllerutil.NewControllerRef(job, "batch/v1", "Job")},
				// As the controller creates them: not yet counted.
				Finalizers: []string{batchv1.JobTrackingFinalizer}},
			Status: corev1.PodStatus{Phase: ph},
		})
	}
	return out
}

// newController is a Job controller over a fake API that holds job, with
// job in the controller's cache as its informer would have put it.
func newController(ctx context.Context, job *batchv1.Job, clk *clocktesting.FakeClock) (*Controller, *fake.Clientset, informers.SharedInformerFactory) {
	client := controllertest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f.Batch().V1().Jobs(), f.Core().V1().Pods(), nil, clk)
	_, _ = client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Add(job)
	return c, client, f
}

// addPods stores ps in the API and in the controller's cache.
func addPods(ctx context.Context, client *fake.Clientset, f informers.SharedInformerFactory, ps ...*corev1.Pod) {
	for _, p := range ps {
		_, _ = client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		_ = f.Core().V1().Pods().Informer().GetIndexer().Add(p)
	}
}

const (
	run  = corev1.PodRunning
	ok   = corev1.PodSucceeded
	fail = corev1.PodFailed
)

func TestSync(t *testing.T) {
	tests := []struct {
		name        string
		job         *batchv1.Job
		maxPods     int
		phases      []corev1.PodPhase
		after       time.Duration
		wantCreates int
		wantDeletes int
		wantCond    batchv1.JobConditionType
		wantReason  string
		wantStatus  string
	}{
		{name: "starts parallelism pods", job: newJob(nil), wantCreates: 2, wantStatus: "active=2 succeeded=0 failed=0 terminating=0"},
		{name: "never more than the completions left", job: newJob(nil), phases: []corev1.PodPhase{ok, ok}, wantCreates: 1, wantStatus: "active=1 succeeded=2 failed=0 terminating=0"},
		{name: "replaces a failed pod within backoffLimit", job: newJob(nil), phases: []corev1.PodPhase{fail, fail, run}, wantCreates: 1, wantStatus: "active=2 succeeded=0 failed=2 terminating=0"},
		{name: "complete at completions", job: newJob(nil), phases: []corev1.PodPhase{ok, ok, ok}, wantCond: batchv1.JobComplete, wantReason: batchv1.JobReasonCompletionsReached, wantStatus: "active=0 succeeded=3 failed=0 terminating=0"},
		// Failed waits for the deleted pod to stop; it counts as failed.
		{name: "failed past backoffLimit, active pods deleted", job: newJob(nil), phases: []corev1.PodPhase{fail, fail, fail, run},
			wantDeletes: 1, wantCond: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonBackoffLimitExceeded, wantStatus: "active=0 succeeded=0 failed=4 terminating=1"},
		{name: "failed past backoffLimit, nothing left running", job: newJob(nil), phases: []corev1.PodPhase{fail, fail, fail},
			wantCond: batchv1.JobFailed, wantReason: batchv1.JobReasonBackoffLimitExceeded, wantStatus: "active=0 succeeded=0 failed=3 terminating=0"},
		{name: "failed past activeDeadlineSeconds", job: newJob(func(j *batchv1.Job) {
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
			j.Status.StartTime = &metav1.Time{Time: now}
		}), phases: []corev1.PodPhase{run, run}, after: time.Minute,
			wantDeletes: 2, wantCond: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonDeadlineExceeded, wantStatus: "active=0 succeeded=0 failed=2 terminating=2"},
		{name: "work queue: done when one succeeded and none runs", job: newJob(func(j *batchv1.Job) { j.Spec.Completions = nil }),
			phases: []corev1.PodPhase{ok, fail}, wantCond: batchv1.JobComplete, wantReason: batchv1.JobReasonCompletionsReached, wantStatus: "active=0 succeeded=1 failed=1 terminating=0"},
		{name: "suspended: no pods", job: newJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }), phases: []corev1.PodPhase{run},
			wantDeletes: 1, wantStatus: "active=0 succeeded=0 failed=0 terminating=1"},
		// As upstream, one sync creates or deletes at most
		// MaxPodCreateDeletePerSync pods (3 here); the next syncs do the rest.
		{name: "creates at most the cap of pods a sync", maxPods: 3, job: newJob(func(j *batchv1.Job) { j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](5), ptr.To[int32](5) }),
			wantCreates: 3, wantStatus: "active=3 succeeded=0 failed=0 terminating=0"},
		{name: "deletes at most the cap of pods a sync", maxPods: 3, job: newJob(func(j *batchv1.Job) { j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](1), ptr.To[int32](5) }),
			phases: slices.Repeat([]corev1.PodPhase{run}, 5), wantDeletes: 3, wantStatus: "active=2 succeeded=0 failed=0 terminating=3"},
		{name: "suspending deletes every pod at once", maxPods: 3, job: newJob(func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions, j.Spec.Suspend = ptr.To[int32](5), ptr.To[int32](5), ptr.To(true)
		}), phases: slices.Repeat([]corev1.PodPhase{run}, 5), wantDeletes: 5, wantStatus: "active=0 succeeded=0 failed=0 terminating=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(now)
			c, client, f := newController(ctx, tt.job, clk)
			if c.maxPodsPerSync != MaxPodCreateDeletePerSync || MaxPodCreateDeletePerSync != 500 {
				t.Fatalf("%d pods a sync at most, want upstream's 500", c.maxPodsPerSync)
			}
			if tt.maxPods > 0 {
				c.maxPodsPerSync = tt.maxPods
			}
			addPods(ctx, client, f, pods(tt.job, tt.phases...)...)
			client.ClearActions()
			clk.Step(tt.after)
			if err := c.sync(ctx, "default/pi"); err != nil {
				t.Fatal(err)
			}
			creates, deletes := 0, 0
			for _, w := range controllertest.Writes(client) {
				switch w {
				case "create pods":
					creates++
				case "delete pods":
					deletes++
				}
			}
			if creates != tt.wantCreates || deletes != tt.wantDeletes {
				t.Errorf("created %d, deleted %d pods; want %d and %d", creates, deletes, tt.wantCreates, tt.wantDeletes)
			}
			got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
			if s := fmt.Sprintf("active=%d succeeded=%d failed=%d terminating=%d", got.Status.Active, got.Status.Succeeded, got.Status.Failed, ptr.Deref(got.Status.Terminating, -1)); s != tt.wantStatus {
				t.Errorf("status %s, want %s", s, tt.wantStatus)
			}
			var cond *batchv1.JobCondition
			for i := range got.Status.Conditions {
				ct := got.Status.Conditions[i].Type
				if ct == batchv1.JobComplete || ct == batchv1.JobFailed || ct == batchv1.JobFailureTarget {
					cond = &got.Status.Conditions[i]
				}
			}
			switch {
			case tt.wantCond == "" && cond != nil:
				t.Errorf("unexpected terminal condition %s", cond.Type)
			case tt.wantCond != "" && (cond == nil || cond.Type != tt.wantCond || cond.Reason != tt.wantReason):
				t.Errorf("condition %+v, want %s/%s", cond, tt.wantCond, tt.wantReason)
			}
			if tt.wantCond == batchv1.JobComplete && got.Status.CompletionTime == nil {
				t.Error("complete without completionTime")
			}
			if got.Status.UncountedTerminatedPods == nil || got.Status.Ready == nil {
				t.Error("uncountedTerminatedPods and ready should always be set, as upstream")
			}
		})
	}
}

// A Job whose spec.managedBy names another controller is left to it, as
// upstream: no pods, no status; the built-in name is this controller's.
func TestManagedBy(t *testing.T) {
	for _, tt := range []struct {
		managedBy   string
		wantCreates int
	}{{"example.com/other-controller", 0}, {batchv1.JobControllerName, 2}} {
		t.Run(tt.managedBy, func(t *testing.T) {
			ctx := context.Background()
			job := newJob(func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(tt.managedBy) })
			c, client, _ := newController(ctx, job, clocktesting.NewFakeClock(now))
			client.ClearActions()
			if err := c.sync(ctx, "default/pi"); err != nil {
				t.Fatal(err)
			}
			creates := 0
			for _, w := range controllertest.Writes(client) {
				if w == "create pods" {
					creates++
				}
			}
			if creates != tt.wantCreates {
				t.Errorf("%d pods created, want %d (writes %v)", creates, tt.wantCreates, controllertest.Writes(client))
			}
			if tt.wantCreates == 0 && len(controllertest.Writes(client)) != 0 {
				t.Errorf("writes %v, want none", controllertest.Writes(client))
			}
		})
	}
}

func TestExpectationsPreventDoubleCreate(t *testing.T) {
	ctx := context.Background()
	c, client, _ := newController(ctx, newJob(nil), clocktesting.NewFakeClock(now))
	for range 3 {
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
	}
	creates := 0
	for _, w := range controllertest.Writes(client) {
		if w == "create pods" {
			creates++
		}
	}
	if creates != 2 {
		t.Fatalf("%d pods created by three syncs on a stale cache, want 2", creates)
	}
}

func TestFailedPodsAreReplacedAfterBackoff(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(now)
	j := newJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1); j.Spec.BackoffLimit = ptr.To[int32](6) })
	c, client, f := newController(ctx, j, clk)
	// Two failures, the last 5 s ago: the back-off is 10 s doubled once.
	for i, p := range pods(j, fail, fail) {
		finished := now.Add(-time.Duration(5+10*i) * time.Second)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(finished)}}}}
		addPods(ctx, client, f, p)
	}
	client.ClearActions()
	creates := func() int {
		n := 0
		for _, w := range controllertest.Writes(client) {
			if w == "create pods" {
				n++
			}
		}
		return n
	}
	tests := []struct {
		step        time.Duration
		wantCreates int
	}{
		{step: 0, wantCreates: 0},
		{step: 14 * time.Second, wantCreates: 0},
		{step: 2 * time.Second, wantCreates: 1},
	}
	for _, tt := range tests {
		clk.Step(tt.step)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		if got := creates(); got != tt.wantCreates {
			t.Fatalf("at %s since the last failure: %d pods created, want %d", clk.Now().Sub(now)+5*time.Second, got, tt.wantCreates)
		}
	}
}

// TestFailedOnceItsPodsStopped: past backoffLimit the Job says FailureTarget
// while its last pod terminates, then Failed, with the killed pod counted
// as failed even after it is gone.
func TestFailedOnceItsPodsStopped(t *testing.T) {
	ctx := context.Background()
	job := newJob(nil)
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	ps := pods(job, fail, fail, fail, run)
	addPods(ctx, client, f, ps...)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
	if finished(got) {
		t.Fatalf("finished while a pod was still terminating: %+v", got.Status.Conditions)
	}
	// The running pod is gone: the Job is now Failed.
	_ = f.Core().V1().Pods().Informer().GetIndexer().Delete(ps[3])
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	got, _ = client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
	var conds []string
	for _, cond := range got.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s/%s", cond.Type, cond.Reason))
	}
	want := "[FailureTarget/BackoffLimitExceeded Failed/BackoffLimitExceeded]"
	if fmt.Sprint(conds) != want {
		t.Errorf("conditions %v, want %s", conds, want)
	}
	if s := fmt.Sprintf("failed=%d ready=%d terminating=%d", got.Status.Failed, ptr.Deref(got.Status.Ready, -1), ptr.Deref(got.Status.Terminating, -1)); s != "failed=4 ready=0 terminating=0" {
		t.Errorf("status %s, want failed=4 ready=0 terminating=0", s)
	}
}

// TestIndexedJobGivesEachPodItsIndex: completionMode Indexed runs one pod
// per index not yet completed, each carrying its index as upstream does,
// and status lists the completed indexes.
func TestIndexedJobGivesEachPodItsIndex(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](4)
		j.Spec.Parallelism = ptr.To[int32](4)
		j.Status.CompletedIndexes = "3" // its pod is gone, the record stays
	})
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	done := pods(job, ok)[0]
	done.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}
	addPods(ctx, client, f, done)
	client.ClearActions()

	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	list, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	var got []string
	for _, p := range list.Items {
		if p.Name == done.Name {
			continue
		}
		env := ""
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				env = e.ValueFrom.FieldRef.FieldPath
			}
		}
		got = append(got, fmt.Sprintf("%s ann=%s label=%s host=%s env=%s", p.GenerateName,
			p.Annotations[batchv1.JobCompletionIndexAnnotation], p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname, env))
	}
	slices.Sort(got)
	const envPath = "metadata.labels['batch.kubernetes.io/job-completion-index']"
	want := []string{
		"pi-1- ann=1 label=1 host=pi-1 env=" + envPath,
		"pi-2- ann=2 label=2 host=pi-2 env=" + envPath,
	}
	if !slices.Equal(got, want) {
		t.Errorf("pods:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	j, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
	if j.Status.CompletedIndexes != "0,3" || j.Status.Succeeded != 2 || j.Status.Active != 2 {
		t.Errorf("completedIndexes %q succeeded %d active %d, want \"0,3\", 2 and 2", j.Status.CompletedIndexes, j.Status.Succeeded, j.Status.Active)
	}
}

func TestFormatIndexes(t *testing.T) {
	set := map[int]bool{0: true, 1: true, 2: true, 5: true, 7: true, 8: true, 20: true}
	// Upstream writes a run of two as two indexes: "7,8", not "7-8".
	if got := formatIndexes(set, 10); got != "0-2,5,7,8" {
		t.Errorf("formatIndexes = %q, want 0-2,5,7,8", got)
	}
	if got := formatIndexes(completedIndexes("0-2,5,7-8", 10, nil), 10); got != "0-2,5,7,8" {
		t.Errorf("round trip = %q", got)
	}
}

// syncOnce runs one sync of job with pods in the caches and returns what
// a user reads back: the Job, the pods created and how many were deleted.
func syncOnce(t *testing.T, job *batchv1.Job, ps []*corev1.Pod, after time.Duration) (*batchv1.Job, []*corev1.Pod, int) {
	t.Helper()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(now)
	c, client, f := newController(ctx, job, clk)
	addPods(ctx, client, f, ps...)
	client.ClearActions()
	clk.Step(after)
	if err := c.sync(ctx, job.Namespace+"/"+job.Name); err != nil {
		t.Fatal(err)
	}
	var created []*corev1.Pod
	deletes := 0
	for _, a := range client.Actions() {
		switch ca := a.(type) {
		case k8stesting.CreateAction:
			if p, ok := ca.GetObject().(*corev1.Pod); ok {
				created = append(created, p)
			}
		case k8stesting.DeleteAction:
			if ca.GetResource().Resource == "pods" {
				deletes++
			}
		}
	}
	got, err := client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got, created, deletes
}

// exited makes p a pod whose container ended with code, as the kubelet
// reports it.
func exited(p *corev1.Pod, container string, code int32) *corev1.Pod {
	p.Status.Phase = corev1.PodFailed
	if code == 0 {
		p.Status.Phase = corev1.PodSucceeded
	}
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: container,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(now.Add(-time.Hour))}}})
	return p
}

func conditions(j *batchv1.Job) string {
	var out []string
	for _, c := range j.Status.Conditions {
		out = append(out, fmt.Sprintf("%s/%s: %s", c.Type, c.Reason, c.Message))
	}
	return strings.Join(out, "\n")
}

// TestPodFailurePolicy: the rules of spec.podFailurePolicy decide what a
// failed pod does to the Job, as upstream: FailJob fails it at once with
// reason PodFailurePolicy, Ignore keeps the failure out of status.failed
// and backoffLimit, Count and unmatched failures count as usual.
func TestPodFailurePolicy(t *testing.T) {
	policy := func(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
			j.Spec.BackoffLimit = ptr.To[int32](0)
			j.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
		}
	}
	failJobOn := func(container string, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
		r := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
		if container != "" {
			r.OnExitCodes.ContainerName = ptr.To(container)
		}
		return r
	}
	ignoreDisruption := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}
	disrupted := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Phase = corev1.PodFailed
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
		return p
	}
	initExited := func(p *corev1.Pod, code int32) *corev1.Pod {
		p.Status.Phase = corev1.PodFailed
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}
		return p
	}
	tests := []struct {
		name        string
		job         *batchv1.Job
		pods        func(j *batchv1.Job) []*corev1.Pod
		wantConds   string
		wantFailed  int32
		wantCreates int
		wantDeletes int
	}{{
		name: "FailJob on the exit code: Failed with upstream's message",
		job:  newJob(policy(failJobOn("c", batchv1.PodFailurePolicyOnExitCodesOpIn, 42))),
		pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{exited(pods(j, fail)[0], "c", 42)} },
		wantConds: "FailureTarget/PodFailurePolicy: Container c for pod default/p0 failed with exit code 42 matching FailJob rule at index 0\n" +
			"Failed/PodFailurePolicy: Container c for pod default/p0 failed with exit code 42 matching FailJob rule at index 0",
		wantFailed: 1,
	}, {
		name: "FailJob stops the pods still running, Failed waits for them",
		job:  newJob(policy(ignoreDisruption, failJobOn("", batchv1.PodFailurePolicyOnExitCodesOpNotIn, 1, 2))),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := pods(j, fail, run)
			return []*corev1.Pod{exited(ps[0], "c", 3), ps[1]}
		},
		wantConds:   "FailureTarget/PodFailurePolicy: Container c for pod default/p0 failed with exit code 3 matching FailJob rule at index 1",
		wantFailed:  2,
		wantDeletes: 1,
	}, {
		name: "FailJob on an init container's exit code",
		job:  newJob(policy(failJobOn("setup", batchv1.PodFailurePolicyOnExitCodesOpIn, 5))),
		pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{initExited(pods(j, fail)[0], 5)} },
		wantConds: "FailureTarget/PodFailurePolicy: Container setup for pod default/p0 failed with exit code 5 matching FailJob rule at index 0\n" +
			"Failed/PodFailurePolicy: Container setup for pod default/p0 failed with exit code 5 matching FailJob rule at index 0",
		wantFailed: 1,
	}, {
		name: "FailJob on a pod condition",
		job: newJob(policy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}})),
		pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{disrupted(pods(j, fail)[0])} },
		wantConds: "FailureTarget/PodFailurePolicy: Pod default/p0 has condition DisruptionTarget matching FailJob rule at index 0\n" +
			"Failed/PodFailurePolicy: Pod default/p0 has condition DisruptionTarget matching FailJob rule at index 0",
		wantFailed: 1,
	}, {
		name:        "Ignore: not counted, not against backoffLimit 0, replaced",
		job:         newJob(policy(ignoreDisruption)),
		pods:        func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{disrupted(pods(j, fail)[0])} },
		wantCreates: 2,
	}, {
		name: "another container's exit code does not match",
		job:  newJob(policy(failJobOn("other", batchv1.PodFailurePolicyOnExitCodesOpIn, 42))),
		pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{exited(pods(j, fail)[0], "c", 42)} },
		wantConds: "FailureTarget/BackoffLimitExceeded: Job has reached the specified backoff limit\n" +
			"Failed/BackoffLimitExceeded: Job has reached the specified backoff limit",
		wantFailed: 1,
	}, {
		name: "Count counts against backoffLimit",
		job: newJob(policy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionCount,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
			failJobOn("", batchv1.PodFailurePolicyOnExitCodesOpIn, 42))),
		pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{exited(pods(j, fail)[0], "c", 42)} },
		wantConds: "FailureTarget/BackoffLimitExceeded: Job has reached the specified backoff limit\n" +
			"Failed/BackoffLimitExceeded: Job has reached the specified backoff limit",
		wantFailed: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, created, deletes := syncOnce(t, tt.job, tt.pods(tt.job), 0)
			creates := len(created)
			if c := conditions(got); c != tt.wantConds {
				t.Errorf("conditions:\n%s\nwant:\n%s", c, tt.wantConds)
			}
			if got.Status.Failed != tt.wantFailed || creates != tt.wantCreates || deletes != tt.wantDeletes {
				t.Errorf("failed=%d, %d pods created, %d deleted; want failed=%d, %d and %d",
					got.Status.Failed, creates, deletes, tt.wantFailed, tt.wantCreates, tt.wantDeletes)
			}
		})
	}
}

// TestPodReplacementPolicy: with podReplacementPolicy Failed a deleted pod
// is replaced only once it has stopped, and status.terminating counts it;
// TerminatingOrFailed replaces it right away.
func TestPodReplacementPolicy(t *testing.T) {
	terminatingPods := func(j *batchv1.Job) []*corev1.Pod {
		ps := pods(j, run, run)
		// Deleted a while ago: its failure's back-off is over.
		ps[0].DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
		for i, p := range ps {
			p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(i)}
		}
		return ps
	}
	indexed := func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Parallelism = ptr.To[int32](3)
	}
	tests := []struct {
		name        string
		job         *batchv1.Job
		wantCreates int
		wantStatus  string
	}{
		{name: "TerminatingOrFailed replaces a terminating pod", job: newJob(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed) }),
			wantCreates: 1, wantStatus: "active=2 terminating=1"},
		{name: "Failed waits for it to stop", job: newJob(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			wantStatus: "active=1 terminating=1"},
		{name: "a pod failure policy implies Failed", job: newJob(func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{} }),
			wantStatus: "active=1 terminating=1"},
		{name: "Failed, Indexed: only the free index gets a pod", job: newJob(func(j *batchv1.Job) { indexed(j); j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			wantCreates: 1, wantStatus: "active=2 terminating=1"},
		{name: "TerminatingOrFailed, Indexed: the terminating pod's index too", job: newJob(func(j *batchv1.Job) { indexed(j); j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed) }),
			wantCreates: 2, wantStatus: "active=3 terminating=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, created, _ := syncOnce(t, tt.job, terminatingPods(tt.job), 0)
			creates := len(created)
			if s := fmt.Sprintf("active=%d terminating=%d", got.Status.Active, ptr.Deref(got.Status.Terminating, -1)); s != tt.wantStatus || creates != tt.wantCreates {
				t.Errorf("%s with %d pods created, want %s with %d", s, creates, tt.wantStatus, tt.wantCreates)
			}
		})
	}
}

// indexedPods are pods of an Indexed Job, pod i running index i.
func indexedPods(j *batchv1.Job, phases ...corev1.PodPhase) []*corev1.Pod {
	ps := pods(j, phases...)
	for i, p := range ps {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(i)}
	}
	return ps
}

// TestSuccessPolicy: an Indexed Job whose succeeded indexes meet a rule of
// spec.successPolicy says SuccessCriteriaMet (reason SuccessPolicy), stops
// its other pods, then says Complete with the same reason and message.
func TestSuccessPolicy(t *testing.T) {
	withPolicy := func(rules ...batchv1.SuccessPolicyRule) *batchv1.Job {
		return newJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](5)
			j.Spec.Parallelism = ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules}
		})
	}
	t.Run("the leader succeeded: the workers are stopped, then Complete", func(t *testing.T) {
		ctx := context.Background()
		job := withPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0")})
		c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
		ps := indexedPods(job, ok, run, run, run, run)
		addPods(ctx, client, f, ps...)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		const met = "SuccessCriteriaMet/SuccessPolicy: Matched rules at index 0"
		if c := conditions(got); c != met || got.Status.Succeeded != 1 || got.Status.CompletedIndexes != "0" || ptr.Deref(got.Status.Terminating, 0) != 4 {
			t.Fatalf("conditions %q, succeeded %d, completedIndexes %q, terminating %d; want %q, 1, \"0\" and 4",
				c, got.Status.Succeeded, got.Status.CompletedIndexes, ptr.Deref(got.Status.Terminating, 0), met)
		}
		list, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if len(list.Items) != 1 {
			t.Errorf("%d pods left, want the leader's only", len(list.Items))
		}
		for _, p := range ps[1:] {
			_ = f.Core().V1().Pods().Informer().GetIndexer().Delete(p)
		}
		_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		got, _ = client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		if c, want := conditions(got), met+"\nComplete/SuccessPolicy: Matched rules at index 0"; c != want || got.Status.CompletionTime == nil {
			t.Errorf("conditions:\n%s\nwant:\n%s\nand a completionTime (%v)", c, want, got.Status.CompletionTime)
		}
	})
	tests := []struct {
		name        string
		job         *batchv1.Job
		phases      []corev1.PodPhase
		wantConds   string
		wantCreates int
	}{
		{name: "succeededCount; a rule naming no index in range is skipped",
			job:       withPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("7-9")}, batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](2)}),
			phases:    []corev1.PodPhase{ok, ok, run},
			wantConds: "SuccessCriteriaMet/SuccessPolicy: Matched rules at index 1"},
		{name: "succeededCount within succeededIndexes met",
			job:       withPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1-3"), SucceededCount: ptr.To[int32](2)}),
			phases:    []corev1.PodPhase{run, ok, run, ok},
			wantConds: "SuccessCriteriaMet/SuccessPolicy: Matched rules at index 0"},
		{name: "succeededCount within succeededIndexes not met: index 4 is outside",
			job:         withPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1-3"), SucceededCount: ptr.To[int32](2)}),
			phases:      []corev1.PodPhase{run, ok, run, run, ok},
			wantCreates: 0},
		{name: "not all of succeededIndexes: the Job goes on",
			job:         withPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,1")}),
			phases:      []corev1.PodPhase{ok, run, fail},
			wantCreates: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, created, _ := syncOnce(t, tt.job, indexedPods(tt.job, tt.phases...), 0)
			creates := len(created)
			if c := conditions(got); c != tt.wantConds || creates != tt.wantCreates {
				t.Errorf("conditions %q, %d pods created; want %q and %d", c, creates, tt.wantConds, tt.wantCreates)
			}
		})
	}
}

// TestBackoffLimitPerIndex: each index of an Indexed Job with
// backoffLimitPerIndex retries on its own budget, carried from pod to pod
// in the job-index-failure-count annotation; an index past it is listed
// in status.failedIndexes and gets no more pods, and the Job fails with
// FailedIndexes once every index has ended, or MaxFailedIndexesExceeded.
func TestBackoffLimitPerIndex(t *testing.T) {
	perIndex := func(limit int32, mutate ...func(*batchv1.Job)) *batchv1.Job {
		return newJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptr.To[int32](3)
			j.Spec.BackoffLimit = nil
			j.Spec.BackoffLimitPerIndex = ptr.To(limit)
			for _, m := range mutate {
				m(j)
			}
		})
	}
	// failures sets the index's failure count on its pod, as the
	// controller wrote it when it created the pod.
	failures := func(p *corev1.Pod, n string) *corev1.Pod {
		p.Annotations[batchv1.JobIndexFailureCountAnnotation] = n
		if p.Status.Phase == corev1.PodFailed {
			exited(p, "c", 1)
		}
		return p
	}
	type want struct {
		conds         string
		failedIndexes string
		failed        int32
		created       string // generateName and failure count annotations of the pods created
		deletes       int
	}
	tests := []struct {
		name string
		job  *batchv1.Job
		pods func(j *batchv1.Job) []*corev1.Pod
		want want
	}{{
		name: "a failure within the index's limit: the index is retried, its failure counted on the new pod",
		job:  perIndex(1),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := indexedPods(j, fail, run, ok)
			return []*corev1.Pod{failures(ps[0], "0"), ps[1], ps[2]}
		},
		want: want{failed: 1, created: "pi-0- failures=1 ignored="},
	}, {
		name: "past the index's limit: the index failed, no new pod, the others go on",
		job:  perIndex(1),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := indexedPods(j, fail, run, ok)
			return []*corev1.Pod{failures(ps[0], "1"), ps[1], ps[2]}
		},
		want: want{failedIndexes: "0", failed: 1},
	}, {
		name: "every index ended, one failed: Failed with FailedIndexes",
		job:  perIndex(1),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := indexedPods(j, fail, ok, ok)
			return []*corev1.Pod{failures(ps[0], "1"), ps[1], ps[2]}
		},
		want: want{failedIndexes: "0", failed: 1,
			conds: "FailureTarget/FailedIndexes: Job has failed indexes\nFailed/FailedIndexes: Job has failed indexes"},
	}, {
		name: "more failed indexes than maxFailedIndexes: the Job stops at once",
		job:  perIndex(0, func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](0) }),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := indexedPods(j, fail, run)
			return []*corev1.Pod{failures(ps[0], "0"), ps[1]}
		},
		want: want{failedIndexes: "0", failed: 2, deletes: 1,
			conds: "FailureTarget/MaxFailedIndexesExceeded: Job has exceeded the specified maximal number of failed indexes"},
	}, {
		name: "a FailIndex rule fails the index on its first failure",
		job: perIndex(3, func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
		}),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := indexedPods(j, fail, run, run)
			ps[0].Annotations[batchv1.JobIndexFailureCountAnnotation] = "0"
			return []*corev1.Pod{exited(ps[0], "c", 42), ps[1], ps[2]}
		},
		want: want{failedIndexes: "0", failed: 1},
	}, {
		name: "an ignored failure is counted apart and uses nothing of the limit",
		job: perIndex(0, func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			ps := indexedPods(j, fail, run, run)
			return []*corev1.Pod{failures(ps[0], "0"), ps[1], ps[2]}
		},
		want: want{created: "pi-0- failures=0 ignored=1"},
	}, {
		name: "each index backs off on its own failures",
		job:  perIndex(6),
		pods: func(j *batchv1.Job) []*corev1.Pod {
			// Index 0's fourth failure backs off 80 s and was an hour
			// ago; index 1's sixth backs off 320 s and was 100 s ago.
			ps := indexedPods(j, fail, fail, run)
			failures(ps[1], "5").Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(now.Add(-100 * time.Second))
			return []*corev1.Pod{failures(ps[0], "3"), ps[1], ps[2]}
		},
		// Index 1's failure is counted once a new pod of the index has
		// taken over its failure count, as upstream counts it: until then
		// the failed pod keeps its finalizer.
		want: want{failed: 1, created: "pi-0- failures=4 ignored="},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, created, deletes := syncOnce(t, tt.job, tt.pods(tt.job), 0)
			var cr []string
			for _, p := range created {
				cr = append(cr, fmt.Sprintf("%s failures=%s ignored=%s", p.GenerateName,
					p.Annotations[batchv1.JobIndexFailureCountAnnotation], p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation]))
			}
			g := want{conds: conditions(got), failedIndexes: ptr.Deref(got.Status.FailedIndexes, "<nil>"), failed: got.Status.Failed,
				created: strings.Join(cr, "; "), deletes: deletes}
			if g != tt.want {
				t.Errorf("got  %+v\nwant %+v", g, tt.want)
			}
		})
	}
}

// TestCountsOutliveTheirPods: status.succeeded and status.failed never go
// down when finished pods are deleted: the work is not redone and the
// failures still count against backoffLimit.
func TestCountsOutliveTheirPods(t *testing.T) {
	// The pods left were counted already: their finalizer is gone.
	counted := func(ps []*corev1.Pod) []*corev1.Pod {
		for _, p := range ps {
			p.Finalizers = nil
		}
		return ps
	}
	job := newJob(func(j *batchv1.Job) {
		j.Status.Succeeded, j.Status.Failed = 2, 2
	})
	got, created, _ := syncOnce(t, job, counted(pods(job, fail)), 0)
	if got.Status.Succeeded != 2 || got.Status.Failed != 2 || len(created) != 1 {
		t.Errorf("succeeded=%d failed=%d with %d pods created, want 2, 2 and 1 (the last completion)", got.Status.Succeeded, got.Status.Failed, len(created))
	}
	// Two failures gone from the API, a third one there: past backoffLimit 2.
	job = newJob(func(j *batchv1.Job) { j.Status.Failed = 3 })
	got, _, _ = syncOnce(t, job, counted(pods(job, fail)), 0)
	if c := conditions(got); !strings.Contains(c, "Failed/BackoffLimitExceeded") || got.Status.Failed != 3 {
		t.Errorf("conditions %q failed=%d, want Failed/BackoffLimitExceeded and 3", c, got.Status.Failed)
	}
}

// TestShrunkIndexedJob: an Indexed Job whose completions and parallelism
// were lowered (elastic indexed jobs) deletes exactly the pods of the
// indexes now out of range, and a second pod of an index, as upstream;
// results of the dropped indexes no longer count.
func TestShrunkIndexedJob(t *testing.T) {
	shrunk := func(to int32, st batchv1.JobStatus) *batchv1.Job {
		return newJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = ptr.To(to), ptr.To(to)
			j.Status = st
		})
	}
	tests := []struct {
		name        string
		job         *batchv1.Job
		phases      []corev1.PodPhase
		mutate      func([]*corev1.Pod)
		wantDeleted []string
		wantStatus  string
	}{
		{name: "5 to 3, the out-of-range pods go even if they are the oldest",
			job: shrunk(3, batchv1.JobStatus{}), phases: []corev1.PodPhase{run, run, run, run, run},
			mutate: func(ps []*corev1.Pod) {
				for i, p := range ps {
					p.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(i) * time.Minute))
				}
			},
			wantDeleted: []string{"p3", "p4"}, wantStatus: "active=3 succeeded=0 completed=\"\""},
		{name: "results of dropped indexes no longer count",
			job:    shrunk(2, batchv1.JobStatus{CompletedIndexes: "0,4", Succeeded: 2}),
			phases: []corev1.PodPhase{ok, run, run, run, ok}, wantDeleted: []string{"p2", "p3"},
			wantStatus: "active=1 succeeded=1 completed=\"0\""},
		{name: "out-of-range pods go even when the count is right",
			job:    shrunk(2, batchv1.JobStatus{}),
			phases: []corev1.PodPhase{run, run, run, run},
			mutate: func(ps []*corev1.Pod) {
				// Indexes 0 and 1 have not started yet.
				ps[0].Annotations[batchv1.JobCompletionIndexAnnotation] = "2"
				ps[1].Annotations[batchv1.JobCompletionIndexAnnotation] = "3"
				ps[2].Status.Phase, ps[3].Status.Phase = fail, fail
			},
			wantDeleted: []string{"p0", "p1"}, wantStatus: "active=0 succeeded=0 completed=\"\""},
		{name: "an index run twice keeps its ready pod",
			job: shrunk(2, batchv1.JobStatus{}), phases: []corev1.PodPhase{run, run, run},
			mutate: func(ps []*corev1.Pod) {
				ps[1].Annotations[batchv1.JobCompletionIndexAnnotation] = "0"
				ps[1].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				ps[2].Annotations[batchv1.JobCompletionIndexAnnotation] = "1"
			},
			wantDeleted: []string{"p0"}, wantStatus: "active=2 succeeded=0 completed=\"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, client, f := newController(ctx, tt.job, clocktesting.NewFakeClock(now))
			c.PodFailureBackoff = 0
			ps := indexedPods(tt.job, tt.phases...)
			if tt.mutate != nil {
				tt.mutate(ps)
			}
			addPods(ctx, client, f, ps...)
			client.ClearActions()
			if err := c.sync(ctx, "default/pi"); err != nil {
				t.Fatal(err)
			}
			var deleted []string
			creates := 0
			for _, a := range client.Actions() {
				switch ca := a.(type) {
				case k8stesting.DeleteAction:
					deleted = append(deleted, ca.GetName())
				case k8stesting.CreateAction:
					if ca.GetResource().Resource == "pods" {
						creates++
					}
				}
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, tt.wantDeleted) || creates != 0 {
				t.Errorf("deleted %v and created %d pods, want %v deleted and none created", deleted, creates, tt.wantDeleted)
			}
			got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
			if s := fmt.Sprintf("active=%d succeeded=%d completed=%q", got.Status.Active, got.Status.Succeeded, got.Status.CompletedIndexes); s != tt.wantStatus {
				t.Errorf("status %s, want %s", s, tt.wantStatus)
			}
		})
	}
}

// trackingWrites lists, in order, the controller's status writes (with
// counts and uncountedTerminatedPods) and finalizer patches.
func trackingWrites(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		switch ca := a.(type) {
		case k8stesting.UpdateAction:
			if j, ok := ca.GetObject().(*batchv1.Job); ok && ca.GetSubresource() == "status" {
				u := ptr.Deref(j.Status.UncountedTerminatedPods, batchv1.UncountedTerminatedPods{})
				out = append(out, fmt.Sprintf("status succeeded=%d failed=%d uncounted=%v/%v completed=%q", j.Status.Succeeded, j.Status.Failed, u.Succeeded, u.Failed, j.Status.CompletedIndexes))
			}
		case k8stesting.PatchAction:
			if ca.GetResource().Resource == "pods" && strings.Contains(string(ca.GetPatch()), batchv1.JobTrackingFinalizer) {
				out = append(out, "release "+ca.GetName())
			}
		}
	}
	return out
}

// apiFinalizers are the finalizers of the pods in the fake API, by pod name.
func apiFinalizers(ctx context.Context, t *testing.T, client *fake.Clientset) map[string][]string {
	t.Helper()
	list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Finalizers
	}
	return out
}

// TestTrackingWithFinalizers: the pods the controller creates carry the
// job-tracking finalizer; a finished pod is counted in upstream's order
// (its UID into uncountedTerminatedPods, then the finalizer goes, then the
// UID moves into the count), so that a pod deleted right after it failed
// still counts against backoffLimit, and nothing is left uncounted at rest.
func TestTrackingWithFinalizers(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) {
		j.Spec.Parallelism, j.Spec.Completions, j.Spec.BackoffLimit = ptr.To[int32](1), ptr.To[int32](1), ptr.To[int32](0)
	})
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	list, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 || !slices.Equal(list.Items[0].Finalizers, []string{batchv1.JobTrackingFinalizer}) {
		t.Fatalf("pods %+v, want one with the finalizer %s", list.Items, batchv1.JobTrackingFinalizer)
	}
	// The pod fails and is deleted at once (kubectl delete --grace-period=0):
	// the finalizer keeps it, Failed and terminating, until it is counted.
	p := list.Items[0].DeepCopy()
	p.Status.Phase = corev1.PodFailed
	p.DeletionTimestamp = &metav1.Time{Time: now}
	_ = f.Core().V1().Pods().Informer().GetIndexer().Add(p)
	got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
	client.ClearActions()
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("status succeeded=0 failed=0 uncounted=[]/[%s] completed=\"\"", p.UID),
		"release " + p.Name,
		"status succeeded=0 failed=1 uncounted=[]/[] completed=\"\"",
	}
	if w := trackingWrites(client); !slices.Equal(w, want) {
		t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(w, "\n"), strings.Join(want, "\n"))
	}
	got, _ = client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
	if c := conditions(got); !strings.Contains(c, "Failed/BackoffLimitExceeded") || got.Status.Failed != 1 {
		t.Errorf("conditions %q failed=%d, want Failed/BackoffLimitExceeded and 1", c, got.Status.Failed)
	}
	if fin := apiFinalizers(ctx, t, client); len(fin[p.Name]) != 0 {
		t.Errorf("finalizers %v left on the counted pod", fin[p.Name])
	}

	// A sync on a cache that still shows the finalizer counts nothing twice.
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	if again, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{}); again.Status.Failed != 1 {
		t.Errorf("failed=%d after a sync on a stale cache, want 1", again.Status.Failed)
	}
}

// TestTrackingResumesAfterACrash: a controller that stopped between the
// steps of counting a pod picks up where it stopped: a UID still in
// uncountedTerminatedPods is counted once, whether its pod still has the
// finalizer or is gone.
func TestTrackingResumesAfterACrash(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To[int32](5)
		j.Status.Succeeded, j.Status.Failed = 1, 0
		j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"p0", "gone"}, Failed: []types.UID{"p1"}}
	})
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	c.PodFailureBackoff = 0
	addPods(ctx, client, f, pods(job, ok, fail)...)
	client.ClearActions()
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	// The pod gone is counted, the others once their finalizer is gone.
	w := trackingWrites(client)
	if len(w) == 4 {
		slices.Sort(w[1:3])
	}
	want := []string{
		"status succeeded=2 failed=0 uncounted=[p0]/[p1] completed=\"\"",
		"release p0", "release p1",
		"status succeeded=3 failed=1 uncounted=[]/[] completed=\"\"",
	}
	if !slices.Equal(w, want) {
		t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(w, "\n"), strings.Join(want, "\n"))
	}
}

// TestFinishedJobReleasesItsPods: once a Job has finished no pod of it
// keeps the finalizer, counted or not; a pod created after it finished
// loses it too.
func TestFinishedJobReleasesItsPods(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) })
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	ps := pods(job, ok, ok, ok, fail, run)
	// A fourth success, of a pod being deleted: counted all the same.
	ps[4].DeletionTimestamp = &metav1.Time{Time: now}
	ps[4].Status.Phase = corev1.PodSucceeded
	addPods(ctx, client, f, ps...)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	for name, fin := range apiFinalizers(ctx, t, client) {
		if len(fin) != 0 {
			t.Errorf("pod %s still has finalizers %v", name, fin)
		}
	}
	got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
	if c := conditions(got); !strings.Contains(c, "Complete/") || got.Status.Succeeded != 4 || got.Status.Failed != 1 {
		t.Errorf("conditions %q succeeded=%d failed=%d, want Complete, 4 and 1", c, got.Status.Succeeded, got.Status.Failed)
	}

	late := pods(job, run)[0]
	late.Name, late.UID = "late", "late"
	addPods(ctx, client, f, late)
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	if fin := apiFinalizers(ctx, t, client)["late"]; len(fin) != 0 {
		t.Errorf("pod of the finished Job still has finalizers %v", fin)
	}
}

// TestOrphanPodsLoseTheFinalizer: a pod whose Job was deleted, or that has
// no controller any more, loses the finalizer; a pod of a live Job, or of
// another kind of owner, keeps it.
func TestOrphanPodsLoseTheFinalizer(t *testing.T) {
	ctx := context.Background()
	job := newJob(nil)
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	gone := newJob(func(j *batchv1.Job) { j.Name, j.UID = "gone", "gone-uid" })
	ps := append(pods(gone, run, ok), pods(job, run)...)
	ps[1].Name, ps[1].UID = "p1-no-owner", "p1-no-owner"
	ps[1].OwnerReferences = nil
	ps[2].Name, ps[2].UID = "live", "live"
	other := pods(job, run)[0]
	other.Name, other.UID = "other", "other"
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}
	ps = append(ps, other)
	addPods(ctx, client, f, ps...)
	// What the informer does: the deleted Job's sync finds its pods, the
	// pod events find the pods with no controller.
	if err := c.sync(ctx, "default/gone"); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		c.podEvent(p, false, false)
	}
	for c.orphans.Len() > 0 {
		key, _ := c.orphans.Get()
		if err := c.syncOrphanPod(ctx, key); err != nil {
			t.Fatal(err)
		}
		c.orphans.Done(key)
	}
	fin := apiFinalizers(ctx, t, client)
	got := fmt.Sprintf("p0=%v p1-no-owner=%v live=%v other=%v", fin["p0"], fin["p1-no-owner"], fin["live"], fin["other"])
	want := fmt.Sprintf("p0=[] p1-no-owner=[] live=[%[1]s] other=[%[1]s]", batchv1.JobTrackingFinalizer)
	if got != want {
		t.Errorf("finalizers %s, want %s", got, want)
	}
}

// TestAdoptedPodsAreTracked: an orphan pod the Job adopts gets the
// finalizer with its owner reference; one it releases loses it.
func TestAdoptedPodsAreTracked(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) })
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	ps := pods(job, run, run)
	ps[0].OwnerReferences, ps[0].Finalizers = nil, nil
	ps[1].Labels = map[string]string{"other": "x"}
	addPods(ctx, client, f, ps...)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	list, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	var got []string
	for _, p := range list.Items {
		got = append(got, fmt.Sprintf("%s owned=%t finalizers=%v", p.Name, metav1.IsControlledBy(&p, job), p.Finalizers))
	}
	slices.Sort(got)
	want := []string{"p0 owned=true finalizers=[" + batchv1.JobTrackingFinalizer + "]", "p1 owned=false finalizers=[]"}
	if !slices.Equal(got, want) {
		t.Errorf("pods %v, want %v", got, want)
	}
}

// TestTrackingEdgeCases: which pods the controller counts, and when it lets
// go of them, as upstream does.
func TestTrackingEdgeCases(t *testing.T) {
	t.Run("pods a suspended Job deletes lose the finalizer first and do not count as failed", func(t *testing.T) {
		ctx := context.Background()
		job := newJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
		c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
		addPods(ctx, client, f, pods(job, run, run)...)
		client.ClearActions()
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		var w []string
		for _, a := range client.Actions() {
			if a.GetResource().Resource == "pods" && (a.GetVerb() == "patch" || a.GetVerb() == "delete") {
				w = append(w, a.GetVerb())
			}
		}
		got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		if want := []string{"patch", "delete", "patch", "delete"}; !slices.Equal(w, want) || got.Status.Failed != 0 {
			t.Errorf("pod writes %v with failed=%d, want %v and 0", w, got.Status.Failed, want)
		}
	})
	t.Run("a Job that met its success policy does not count the pods it stops as failed", func(t *testing.T) {
		job := newJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
		})
		got, _, deletes := syncOnce(t, job, indexedPods(job, ok, run), 0)
		if got.Status.Failed != 0 || got.Status.Succeeded != 1 || deletes != 1 {
			t.Errorf("failed=%d succeeded=%d with %d pods deleted, want 0, 1 and 1", got.Status.Failed, got.Status.Succeeded, deletes)
		}
	})
	t.Run("a deleted pod is not a failure when only failed pods are replaced", func(t *testing.T) {
		job := newJob(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) })
		ps := pods(job, run)
		ps[0].DeletionTimestamp = &metav1.Time{Time: now}
		got, _, _ := syncOnce(t, job, ps, 0)
		if got.Status.Failed != 0 || len(got.Status.UncountedTerminatedPods.Failed) != 0 {
			t.Errorf("failed=%d uncounted %v, want nothing counted yet", got.Status.Failed, got.Status.UncountedTerminatedPods.Failed)
		}
	})
	t.Run("a deleted pod is a failure, and replaced, once its deletion is final", func(t *testing.T) {
		job := newJob(func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.Parallelism = ptr.To[int32](1)
		})
		ps := pods(job, run)
		// The kubelet's last delete, once it stopped the pod a while ago
		// (its failure's back-off is over): it does not report the pod Failed.
		ps[0].DeletionTimestamp, ps[0].DeletionGracePeriodSeconds = &metav1.Time{Time: now.Add(-time.Minute)}, ptr.To[int64](0)
		got, created, _ := syncOnce(t, job, ps, 0)
		if got.Status.Failed != 1 || len(created) != 1 || ptr.Deref(got.Status.Terminating, -1) != 0 {
			t.Errorf("failed=%d terminating=%d with %d pods created, want 1, 0 and 1", got.Status.Failed, ptr.Deref(got.Status.Terminating, -1), len(created))
		}
	})
	t.Run("backoffLimitPerIndex: an index's last failed pod keeps the finalizer until its replacement is created", func(t *testing.T) {
		ctx := context.Background()
		job := newJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](1), ptr.To[int32](1)
			j.Spec.BackoffLimit, j.Spec.BackoffLimitPerIndex = nil, ptr.To[int32](3)
		})
		clk := clocktesting.NewFakeClock(now)
		c, client, f := newController(ctx, job, clk)
		p := exited(indexedPods(job, fail)[0], "c", 1)
		p.Annotations[batchv1.JobIndexFailureCountAnnotation] = "0"
		p.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(now)
		addPods(ctx, client, f, p)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		if fin := apiFinalizers(ctx, t, client)["p0"]; len(fin) != 1 || got.Status.Failed != 0 {
			t.Fatalf("during the back-off: finalizers %v, failed=%d; want the finalizer kept and nothing counted yet", fin, got.Status.Failed)
		}
		_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
		clk.Step(time.Minute)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		got, _ = client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		if fin := apiFinalizers(ctx, t, client)["p0"]; len(fin) != 0 || got.Status.Failed != 1 {
			t.Errorf("once replaced: finalizers %v, failed=%d; want none and 1", fin, got.Status.Failed)
		}
	})
}

// TestStaleJobIsNotSynced: a cached Job older than the controller's last
// status write (its counts predate pods it since released) starts no pods:
// it would count the work of those pods as not done.
func TestStaleJobIsNotSynced(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) { j.ResourceVersion = "5" })
	c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
	c.writes.wrote("default/pi", "7")
	client.ClearActions()
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	if w := controllertest.Writes(client); len(w) != 0 {
		t.Errorf("writes %v on a stale Job, want none", w)
	}
	caughtUp := job.DeepCopy()
	caughtUp.ResourceVersion = "7"
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(caughtUp)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	if w := controllertest.Writes(client); len(w) == 0 {
		t.Error("no writes once the cache caught up")
	}
}

// TestBackoffOutlivesTheFailedPod: the back-off after a failure holds even
// once the failed pod is gone (pod GC, a user's delete, released and
// deleted after it was counted), as upstream keeps it per Job; a success
// starts the count over, and a finished or deleted Job's record goes.
func TestBackoffOutlivesTheFailedPod(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(now)
	j := newJob(func(j *batchv1.Job) {
		j.Spec.Parallelism, j.Spec.Completions, j.Spec.BackoffLimit = ptr.To[int32](1), ptr.To[int32](3), ptr.To[int32](6)
	})
	c, client, f := newController(ctx, j, clk)
	terminated := func(p *corev1.Pod, code int32, at time.Time) *corev1.Pod {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}}}}
		return p
	}
	// As the informers would: the cache catches up with the API.
	refresh := func() {
		got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(got)
		ps, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		indexer := f.Core().V1().Pods().Informer().GetIndexer()
		for _, p := range indexer.List() {
			_ = indexer.Delete(p)
		}
		for i := range ps.Items {
			_ = indexer.Add(&ps.Items[i])
		}
		for _, uid := range []types.UID{"p0", "p1", "p2"} {
			c.removals.observed("default/pi", uid)
		}
	}
	creates := func() int {
		n := 0
		for _, w := range controllertest.Writes(client) {
			if w == "create pods" {
				n++
			}
		}
		return n
	}
	syncAt := func(step time.Duration) {
		t.Helper()
		clk.Step(step)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		refresh()
	}
	ps := pods(j, fail, ok, fail)
	addPods(ctx, client, f, terminated(ps[0], 1, now.Add(-2*time.Second)))
	client.ClearActions()

	syncAt(0)
	if n := creates(); n != 0 {
		t.Fatalf("2 s after the failure: %d pods created, want none (10 s back-off)", n)
	}
	// The failed pod, counted and released, is deleted.
	if err := client.CoreV1().Pods("default").Delete(ctx, "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh()
	syncAt(3 * time.Second)
	if n := creates(); n != 0 {
		t.Fatalf("5 s after the failure, its pod deleted: %d pods created, want none", n)
	}
	syncAt(6 * time.Second)
	if n := creates(); n != 1 {
		t.Fatalf("11 s after the failure: %d pods created, want 1", n)
	}
	c.expectations.CreationObserved("default/pi") // as the pod informer would

	// A success starts over: the failure after it waits 10 s, not 20 s.
	for _, p := range []*corev1.Pod{terminated(ps[1], 0, clk.Now()), terminated(ps[2], 1, clk.Now().Add(time.Second))} {
		addPods(ctx, client, f, p)
	}
	for _, p := range f.Core().V1().Pods().Informer().GetIndexer().List() {
		if p := p.(*corev1.Pod); p.Name != "p1" && p.Name != "p2" {
			_ = client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
	}
	refresh()
	client.ClearActions()
	syncAt(2 * time.Second)
	if rec := c.backoffs.next("default/pi", j.UID, nil, nil); rec.failures != 1 || !rec.last.Equal(now.Add(10*time.Second)) {
		t.Fatalf("after a success and a failure: record %+v, want 1 failure at +10s", rec)
	}
	syncAt(10 * time.Second)
	if n := creates(); n != 1 {
		t.Fatalf("11 s after the failure that followed a success: %d pods created, want 1", n)
	}

	// Deleted, the Job's record goes with it.
	_ = client.BatchV1().Jobs("default").Delete(ctx, "pi", metav1.DeleteOptions{})
	_ = f.Batch().V1().Jobs().Informer().GetIndexer().Delete(j)
	if err := c.sync(ctx, "default/pi"); err != nil {
		t.Fatal(err)
	}
	if rec := c.backoffs.next("default/pi", j.UID, nil, nil); rec.failures != 0 {
		t.Fatalf("record of a deleted Job kept: %+v", rec)
	}
}

// Suspending a Job and resuming it shows in its Suspended condition and
// events, as upstream, and resuming restarts status.startTime so that
// activeDeadlineSeconds does not count the time spent suspended.
func TestSuspendAndResume(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(now)
	job := newJob(func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: now} })
	c, client, f := newController(ctx, job, clk)
	rec := record.NewFakeRecorder(10)
	c.Events = rec
	syncWith := func(mutate func(j *batchv1.Job)) *batchv1.Job {
		t.Helper()
		j, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		mutate(j)
		j, _ = client.BatchV1().Jobs("default").Update(ctx, j, metav1.UpdateOptions{})
		_ = f.Batch().V1().Jobs().Informer().GetIndexer().Update(j)
		if err := c.sync(ctx, "default/pi"); err != nil {
			t.Fatal(err)
		}
		got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		return got
	}
	suspendedCond := func(j *batchv1.Job) string {
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobSuspended {
				return fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message)
			}
		}
		return "none"
	}

	clk.Step(time.Minute)
	got := syncWith(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	if s := suspendedCond(got); s != "True/JobSuspended/Job suspended" {
		t.Errorf("suspended: condition %s", s)
	}
	drain := func() []string {
		var events []string
		for len(rec.Events) > 0 {
			events = append(events, <-rec.Events)
		}
		return events
	}
	if events := drain(); !slices.Contains(events, "Normal Suspended Job suspended") {
		t.Errorf("suspended: events %q", events)
	}

	clk.Step(time.Hour)
	got = syncWith(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) })
	if s := suspendedCond(got); s != "False/JobResumed/Job resumed" {
		t.Errorf("resumed: condition %s", s)
	}
	if events := drain(); !slices.Contains(events, "Normal Resumed Job resumed") {
		t.Errorf("resumed: events %q", events)
	}
	if got.Status.StartTime == nil || !got.Status.StartTime.Time.Equal(clk.Now()) {
		t.Errorf("resumed: startTime %v, want %v", got.Status.StartTime, clk.Now())
	}
}

// The pods a sync deletes because the Job was suspended or scaled down
// count as terminating, and no longer as ready, in the status that sync
// writes, as upstream's: a status with more ready pods than active is one
// upstream's apiserver refuses.
func TestDeletedPodsAreTerminatingAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{name: "suspended", mutate: func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }, want: "active=0 ready=0 terminating=3"},
		{name: "scaled down", mutate: func(j *batchv1.Job) { j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](1), ptr.To[int32](5) }, want: "active=1 ready=1 terminating=2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := newJob(tt.mutate)
			c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
			ps := pods(job, run, run, run)
			for _, p := range ps {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}
			addPods(ctx, client, f, ps...)
			if err := c.sync(ctx, "default/pi"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
			if s := fmt.Sprintf("active=%d ready=%d terminating=%d", got.Status.Active, ptr.Deref(got.Status.Ready, -1), ptr.Deref(got.Status.Terminating, -1)); s != tt.want {
				t.Errorf("status %s, want %s", s, tt.want)
			}
		})
	}
}

// A Job completing with more pods succeeded than its completions says so
// in a warning event before Completed, as upstream's.
func TestTooManySucceededPodsEvent(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		succeeded int
		want      []string
	}{
		{3, []string{"Normal Completed Job completed"}},
		{4, []string{"Warning TooManySucceededPods Too many succeeded pods running after completion count reached", "Normal Completed Job completed"}},
	} {
		t.Run(strconv.Itoa(tt.succeeded), func(t *testing.T) {
			job := newJob(nil)
			c, client, f := newController(ctx, job, clocktesting.NewFakeClock(now))
			rec := record.NewFakeRecorder(10)
			c.Events = rec
			addPods(ctx, client, f, pods(job, slices.Repeat([]corev1.PodPhase{ok}, tt.succeeded)...)...)
			if err := c.sync(ctx, "default/pi"); err != nil {
				t.Fatal(err)
			}
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if !slices.Equal(events, tt.want) {
				t.Errorf("events %q, want %q", events, tt.want)
			}
		})
	}
}

// A namespace being deleted refuses every pod create; as upstream, the Job
// records no FailedCreate event for it (other refusals still get one).
func TestNoFailedCreateEventInTerminatingNamespace(t *testing.T) {
	ctx := context.Background()
	for _, terminating := range []bool{false, true} {
		c, client, _ := newController(ctx, newJob(nil), clocktesting.NewFakeClock(now))
		rec := record.NewFakeRecorder(10)
		c.Events = rec
		refusal := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "pi-", errors.New("refused"))
		if terminating {
			refusal.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		}
		client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, refusal })
		_ = c.sync(ctx, "default/pi")
		var failed int
		for len(rec.Events) > 0 {
			if e := <-rec.Events; strings.HasPrefix(e, "Warning FailedCreate ") {
				failed++
			}
		}
		if (failed > 0) == terminating {
			t.Errorf("namespace terminating %t: %d FailedCreate events", terminating, failed)
		}
	}
}

// A quota that refuses the Job's pods stops the sync after the first
// slow-start batch, as upstream: one create and one FailedCreate event, not
// one of each per pod of the parallelism.
func TestRefusedCreatesStopAtTheFirstBatch(t *testing.T) {
	ctx := context.Background()
	job := newJob(func(j *batchv1.Job) { j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](20), ptr.To[int32](20) })
	c, client, _ := newController(ctx, job, clocktesting.NewFakeClock(now))
	rec := record.NewFakeRecorder(100)
	c.Events = rec
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "pi-", errors.New("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"))
	attempts := 0
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		attempts++
		return true, nil, quota
	})
	if err := c.sync(ctx, "default/pi"); err == nil {
		t.Fatal("sync: no error for the refused creates")
	}
	failed := 0
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.HasPrefix(e, "Warning FailedCreate ") {
			failed++
		}
	}
	if attempts != 1 || failed != 1 {
		t.Errorf("%d creates tried, %d FailedCreate events; want 1 and 1", attempts, failed)
	}
	// The creates never tried are not waited for: the next sync tries again.
	if !c.expectations.Satisfied("default/pi") {
		t.Error("expectations still wait for pods that will never come")
	}
}
