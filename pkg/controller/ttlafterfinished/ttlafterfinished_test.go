package ttlafterfinished

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestDeletesFinishedJobsOnceTheirTTLPassed(t *testing.T) {
	finished := func(cond batchv1.JobConditionType, ago time.Duration) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
	tests := []struct {
		name       string
		ttl        *int32
		conds      []batchv1.JobCondition
		wantDelete bool
	}{
		{name: "complete, TTL passed", ttl: ptr.To[int32](10), conds: finished(batchv1.JobComplete, 11*time.Second), wantDelete: true},
		{name: "failed, TTL 0", ttl: ptr.To[int32](0), conds: finished(batchv1.JobFailed, 0), wantDelete: true},
		{name: "complete, TTL not yet passed", ttl: ptr.To[int32](10), conds: finished(batchv1.JobComplete, 9*time.Second)},
		{name: "no TTL", conds: finished(batchv1.JobComplete, time.Hour)},
		{name: "still running", ttl: ptr.To[int32](0)},
		{name: "only FailureTarget: its pods still stop", ttl: ptr.To[int32](0), conds: finished(batchv1.JobFailureTarget, time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
				Spec: batchv1.JobSpec{TTLSecondsAfterFinished: tt.ttl}, Status: batchv1.JobStatus{Conditions: tt.conds}}
			client := controllertest.NewClientset(job)
			f := informers.NewSharedInformerFactory(client, 0)
			c := New(client, f.Batch().V1().Jobs(), nil, clocktesting.NewFakeClock(now))
			_ = f.Batch().V1().Jobs().Informer().GetIndexer().Add(job)
			var policy *metav1.DeletionPropagation
			client.PrependReactor("delete", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				policy = a.(k8stesting.DeleteActionImpl).DeleteOptions.PropagationPolicy
				return false, nil, nil
			})
			if err := c.sync(ctx, "default/pi"); err != nil {
				t.Fatal(err)
			}
			deleted := slices.Contains(controllertest.Writes(client), "delete jobs")
			if deleted != tt.wantDelete {
				t.Fatalf("deleted=%v, want %v", deleted, tt.wantDelete)
			}
			if deleted && (policy == nil || *policy != metav1.DeletePropagationForeground) {
				t.Errorf("propagation %v, want Foreground as upstream", policy)
			}
		})
	}
}
