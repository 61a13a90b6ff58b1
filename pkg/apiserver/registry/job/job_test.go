package job

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func resource() *registry.Resource { return Resource(clocktesting.NewFakePassiveClock(now)) }

// newJob returns a job as `kubectl create job pi --image=perl` sends it,
// defaulted as the handler would after decoding.
func newJob(mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "pi", Image: "perl:5.34"}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(j)
	}
	resource().Strategy.Default(j)
	return j
}

// created runs a job through create as the handler does.
func created(t *testing.T, j *batchv1.Job) *batchv1.Job {
	t.Helper()
	r := resource()
	r.Strategy.PrepareForCreate(context.Background(), j)
	if errs := r.Strategy.Validate(context.Background(), j); len(errs) > 0 {
		t.Fatalf("create rejected: %v", errs)
	}
	return j
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		check  func(*testing.T, *batchv1.JobSpec)
	}{
		{name: "nothing set", mutate: func(*batchv1.Job) {}, check: func(t *testing.T, s *batchv1.JobSpec) {
			want := batchv1.JobSpec{
				Completions:          ptr.To[int32](1),
				Parallelism:          ptr.To[int32](1),
				BackoffLimit:         ptr.To[int32](6),
				CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
				Suspend:              ptr.To(false),
				ManualSelector:       ptr.To(false),
				PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			}
			got := *s
			got.Template = corev1.PodTemplateSpec{}
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("defaults = %+v, want %+v", got, want)
			}
		}},
		{name: "parallelism alone leaves completions unset", mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) },
			check: func(t *testing.T, s *batchv1.JobSpec) {
				if s.Completions != nil || *s.Parallelism != 3 {
					t.Errorf("completions %v parallelism %d, want nil and 3", s.Completions, *s.Parallelism)
				}
			}},
		{name: "completions alone gets parallelism 1", mutate: func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) },
			check: func(t *testing.T, s *batchv1.JobSpec) {
				if *s.Completions != 5 || *s.Parallelism != 1 {
					t.Errorf("completions %d parallelism %d, want 5 and 1", *s.Completions, *s.Parallelism)
				}
			}},
		{name: "pod failure policy replaces only failed pods", mutate: func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}
		}, check: func(t *testing.T, s *batchv1.JobSpec) {
			if *s.PodReplacementPolicy != batchv1.Failed || s.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
				t.Errorf("podReplacementPolicy %s, onPodConditions %+v", *s.PodReplacementPolicy, s.PodFailurePolicy.Rules[0].OnPodConditions)
			}
		}},
		{name: "template defaulted", mutate: func(*batchv1.Job) {}, check: func(t *testing.T, s *batchv1.JobSpec) {
			if s.Template.Spec.DNSPolicy != corev1.DNSClusterFirst || s.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("template not defaulted: %+v", s.Template.Spec)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, &newJob(tt.mutate).Spec) })
	}
}

func TestCreateGeneratesSelector(t *testing.T) {
	tests := []struct {
		name      string
		uid       types.UID
		labels    map[string]string
		jobLabels map[string]string
		wantJob   map[string]string // nil: same as the template's
	}{
		{name: "no uid yet"},
		{name: "uid set by the handler", uid: "0b5c6e5f-1111-2222-3333-444455556666"},
		{name: "user template labels kept", labels: map[string]string{"app": "pi"}},
		{name: "own job labels kept", jobLabels: map[string]string{"team": "math"}, wantJob: map[string]string{"team": "math"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := created(t, newJob(func(j *batchv1.Job) {
				j.UID = tt.uid
				j.Labels = tt.jobLabels
				j.Spec.Template.Labels = tt.labels
			}))
			if j.UID == "" || (tt.uid != "" && j.UID != tt.uid) {
				t.Fatalf("uid = %q, want %q or a generated one", j.UID, tt.uid)
			}
			uid := string(j.UID)
			want := map[string]string{
				"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
				"job-name": "pi", "batch.kubernetes.io/job-name": "pi",
			}
			for k, v := range tt.labels {
				want[k] = v
			}
			if !apiequality.Semantic.DeepEqual(j.Spec.Template.Labels, want) {
				t.Errorf("template labels = %v, want %v", j.Spec.Template.Labels, want)
			}
			if got, want := j.Spec.Selector, (&metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": uid}}); !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("selector = %v, want %v", got, want)
			}
			wantJob := tt.wantJob
			if wantJob == nil {
				wantJob = want
			}
			if !apiequality.Semantic.DeepEqual(j.Labels, wantJob) {
				t.Errorf("job labels = %v, want %v", j.Labels, wantJob)
			}
		})
	}

	a, b := created(t, newJob()), created(t, newJob())
	if a.UID == b.UID {
		t.Errorf("two jobs got the same uid %q", a.UID)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{name: "valid", mutate: func(*batchv1.Job) {}},
		{name: "restartPolicy Always", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }, want: []string{"spec.template.spec.restartPolicy"}},
		{name: "negative counts", mutate: func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To[int32](-1)
			j.Spec.BackoffLimit = ptr.To[int32](-1)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](-1)
		}, want: []string{"spec.parallelism", "spec.activeDeadlineSeconds", "spec.backoffLimit"}},
		{name: "indexed without completions", mutate: func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To[int32](2)
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}, want: []string{"spec.completions"}},
		{name: "unknown completion mode", mutate: func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Sometimes") },
			want: []string{"spec.completionMode"}},
		{name: "backoffLimitPerIndex needs indexed", mutate: func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) },
			want: []string{"spec.backoffLimitPerIndex"}},
		{name: "no containers", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.Containers = nil }, want: []string{"spec.template.spec.containers"}},
		{name: "user label conflicts with generated one", mutate: func(j *batchv1.Job) {
			j.Spec.Template.Labels = map[string]string{"job-name": "other"}
		}, want: []string{"spec.template.metadata.labels[job-name]"}},
		{name: "user selector not auto-generated", mutate: func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		}, want: []string{"spec.selector", "spec.template.metadata.labels"}},
		{name: "manual selector must match template", mutate: func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr.To(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		}, want: []string{"spec.template.metadata.labels"}},
		{name: "manual selector matching template", mutate: func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr.To(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			j.Spec.Template.Labels = map[string]string{"app": "pi"}
		}},
		{name: "manual without selector", mutate: func(j *batchv1.Job) { j.Spec.ManualSelector = ptr.To(true) }, want: []string{"spec.selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(tt.mutate)
			r := resource()
			r.Strategy.PrepareForCreate(context.Background(), j)
			assertFields(t, r.Strategy.Validate(context.Background(), j), tt.want)
		})
	}
}

func TestManualSelectorLeavesLabelsAlone(t *testing.T) {
	j := created(t, newJob(func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		j.Spec.Template.Labels = map[string]string{"app": "pi"}
	}))
	if len(j.Spec.Template.Labels) != 1 || len(j.Spec.Selector.MatchLabels) != 1 {
		t.Errorf("manual selector job got generated labels: template %v selector %v", j.Spec.Template.Labels, j.Spec.Selector)
	}
}

func TestUpdate(t *testing.T) {
	stored := created(t, newJob(func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To[int32](3)
	}))
	stored.Status = batchv1.JobStatus{Active: 1, StartTime: ptr.To(metav1.NewTime(now))}
	suspended := stored.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	suspended.Status = batchv1.JobStatus{}

	tests := []struct {
		name       string
		old        *batchv1.Job
		mutate     func(*batchv1.Job)
		generation int64
		want       []string
	}{
		{name: "labels only", old: stored, mutate: func(j *batchv1.Job) { j.Labels = map[string]string{"a": "b"} }, generation: 1},
		{name: "parallelism may change", old: stored, mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) }, generation: 2},
		{name: "suspend", old: stored, mutate: func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }, generation: 2},
		{name: "template immutable", old: stored, mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "perl:6" },
			generation: 2, want: []string{"spec.template"}},
		{name: "scheduling of a running job immutable", old: stored, mutate: func(j *batchv1.Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		}, generation: 2, want: []string{"spec.template"}},
		{name: "scheduling of a suspended, never started job mutable", old: suspended, mutate: func(j *batchv1.Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		}, generation: 2},
		{name: "completions immutable", old: stored, mutate: func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](4) },
			generation: 2, want: []string{"spec.completions"}},
		{name: "selector immutable", old: stored, mutate: func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels["job-name"] = "pi"
		}, generation: 2, want: []string{"spec.selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
			obj := tt.old.DeepCopy()
			tt.mutate(obj)
			obj.Status = batchv1.JobStatus{Failed: 9}
			r.Strategy.PrepareForUpdate(context.Background(), obj, tt.old)
			if obj.Generation != tt.generation {
				t.Errorf("generation = %d, want %d", obj.Generation, tt.generation)
			}
			if !apiequality.Semantic.DeepEqual(obj.Status, tt.old.Status) {
				t.Errorf("main endpoint changed status to %+v", obj.Status)
			}
			assertFields(t, r.Strategy.ValidateUpdate(context.Background(), obj, tt.old), tt.want)
		})
	}
}

func TestStatusUpdate(t *testing.T) {
	stored := created(t, newJob())
	start := metav1.NewTime(now.Add(-time.Minute))
	complete := []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}, {Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	tests := []struct {
		name   string
		status batchv1.JobStatus
		want   []string
	}{
		{name: "running", status: batchv1.JobStatus{Active: 1, StartTime: &start, Ready: ptr.To[int32](1)}},
		{name: "complete", status: batchv1.JobStatus{Succeeded: 1, StartTime: &start, CompletionTime: ptr.To(metav1.NewTime(now)), Conditions: complete}},
		{name: "negative active", status: batchv1.JobStatus{Active: -1}, want: []string{"status.active"}},
		{name: "completed before started", status: batchv1.JobStatus{
			StartTime: &start, CompletionTime: ptr.To(metav1.NewTime(now.Add(-time.Hour))), Conditions: complete,
		}, want: []string{"status.completionTime"}},
		{name: "completion time without Complete", status: batchv1.JobStatus{StartTime: &start, CompletionTime: ptr.To(metav1.NewTime(now))},
			want: []string{"status.completionTime"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
			obj := stored.DeepCopy()
			obj.Status = tt.status
			obj.Spec.Parallelism = ptr.To[int32](7)
			r.Status.PrepareForUpdate(context.Background(), obj, stored)
			if !apiequality.Semantic.DeepEqual(obj.Spec, stored.Spec) {
				t.Errorf("status endpoint changed spec")
			}
			if !apiequality.Semantic.DeepEqual(obj.Status, tt.status) {
				t.Errorf("status = %+v, want %+v", obj.Status, tt.status)
			}
			assertFields(t, r.Status.ValidateUpdate(context.Background(), obj, stored), tt.want)
		})
	}
}

func TestAttrs(t *testing.T) {
	j := created(t, newJob())
	j.Status.Succeeded = 2
	_, fs, err := resource().ObjectAttrs(j)
	if err != nil {
		t.Fatal(err)
	}
	if fs["status.successful"] != "2" || fs["metadata.name"] != "pi" || fs["metadata.namespace"] != "default" {
		t.Errorf("fields = %v", fs)
	}
}

func TestTable(t *testing.T) {
	r := resource()
	var cols []string
	for _, c := range r.Table.Columns() {
		cols = append(cols, c.Name)
	}
	if want := []string{"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"}; !apiequality.Semantic.DeepEqual(cols, want) {
		t.Errorf("columns = %v, want %v", cols, want)
	}
	started := ptr.To(metav1.NewTime(now.Add(-2 * time.Minute)))
	cond := func(t batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
	}
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []interface{} // STATUS COMPLETIONS DURATION
	}{
		{name: "pending", mutate: func(*batchv1.Job) {}, want: []interface{}{"Running", "0/1", ""}},
		{name: "running", mutate: func(j *batchv1.Job) { j.Status.StartTime = started }, want: []interface{}{"Running", "0/1", "2m"}},
		{name: "complete", mutate: func(j *batchv1.Job) {
			j.Status = batchv1.JobStatus{Succeeded: 1, StartTime: started, CompletionTime: ptr.To(metav1.NewTime(now.Add(-90 * time.Second))), Conditions: cond(batchv1.JobComplete)}
		}, want: []interface{}{"Complete", "1/1", "30s"}},
		{name: "failed", mutate: func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobFailed) }, want: []interface{}{"Failed", "0/1", ""}},
		{name: "terminating", mutate: func(j *batchv1.Job) { j.DeletionTimestamp = ptr.To(metav1.NewTime(now)) }, want: []interface{}{"Terminating", "0/1", ""}},
		{name: "suspended", mutate: func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobSuspended) }, want: []interface{}{"Suspended", "0/1", ""}},
		{name: "work queue", mutate: func(j *batchv1.Job) {
			j.Spec.Completions = nil
			j.Spec.Parallelism = ptr.To[int32](4)
			j.Status.Succeeded = 1
		}, want: []interface{}{"Running", "1/1 of 4", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := created(t, newJob())
			j.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Minute))
			tt.mutate(j)
			cells, err := r.Table.Cells(j)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(cells[1:4], tt.want) {
				t.Errorf("STATUS COMPLETIONS DURATION = %v, want %v", cells[1:4], tt.want)
			}
			if cells[0] != "pi" || cells[4] != "3m" || cells[5] != "pi" || cells[6] != "perl:5.34" ||
				cells[7] != "batch.kubernetes.io/controller-uid="+string(j.UID) {
				t.Errorf("cells = %v", cells)
			}
		})
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
