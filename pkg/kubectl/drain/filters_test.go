package drain

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func owned(apiVersion, kind, name string) podOpt {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes}}
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func emptyDir(p *corev1.Pod) {
	p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

func mirror(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }

func deletedAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { t := metav1.NewTime(now.Add(-d)); p.DeletionTimestamp = &t }
}

func pod(name string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

var rs = owned("apps/v1", "ReplicaSet", "rs")

func TestFilters(t *testing.T) {
	dsGone := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "gone")
	lookup := func(_ context.Context, _, name string) error {
		switch name {
		case "ds":
			return nil
		case "gone":
			return dsGone
		}
		return errors.New("boom")
	}
	tests := []struct {
		name     string
		opts     filterOptions
		pods     []corev1.Pod
		remove   []string
		warning  string
		refusals []string
	}{
		{
			name:   "replicated pod is evicted",
			pods:   []corev1.Pod{pod("a", rs)},
			remove: []string{"a"},
		},
		{
			name:     "unmanaged pod needs --force",
			pods:     []corev1.Pod{pod("a"), pod("b", rs), pod("c")},
			refusals: []string{"cannot delete Pods that declare no controller (use --force to override): ns/a, ns/c"},
			remove:   []string{"b"},
		},
		{
			name:    "--force removes unmanaged pods with a warning",
			opts:    filterOptions{force: true},
			pods:    []corev1.Pod{pod("a"), pod("b")},
			remove:  []string{"a", "b"},
			warning: "deleting Pods that declare no controller: ns/a, ns/b",
		},
		{
			name:   "finished unmanaged pod is deleted without --force",
			pods:   []corev1.Pod{pod("done", phase(corev1.PodSucceeded)), pod("failed", phase(corev1.PodFailed), emptyDir)},
			remove: []string{"done", "failed"},
		},
		{
			name:     "DaemonSet pod needs --ignore-daemonsets",
			pods:     []corev1.Pod{pod("d", owned("apps/v1", "DaemonSet", "ds"))},
			refusals: []string{"cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ns/d"},
		},
		{
			name:    "--ignore-daemonsets leaves DaemonSet pods with a warning",
			opts:    filterOptions{ignoreDaemonSets: true},
			pods:    []corev1.Pod{pod("d", owned("apps/v1", "DaemonSet", "ds")), pod("a", rs)},
			remove:  []string{"a"},
			warning: "ignoring DaemonSet-managed Pods: ns/d",
		},
		{
			name:     "pod of a deleted DaemonSet is refused without --force",
			opts:     filterOptions{ignoreDaemonSets: true},
			pods:     []corev1.Pod{pod("d", owned("apps/v1", "DaemonSet", "gone"))},
			refusals: []string{`cannot delete daemonsets.apps "gone" not found: ns/d`},
		},
		{
			name:   "pod of a deleted DaemonSet goes with --force",
			opts:   filterOptions{force: true},
			pods:   []corev1.Pod{pod("d", owned("apps/v1", "DaemonSet", "gone"))},
			remove: []string{"d"},
			// The last filter's verdict stands, as in kubectl: the pod
			// has a controller, so no warning is left.
		},
		{
			name:     "DaemonSet lookup failure refuses",
			pods:     []corev1.Pod{pod("d", owned("apps/v1", "DaemonSet", "other"))},
			refusals: []string{"cannot delete boom: ns/d"},
		},
		{
			name:   "finished DaemonSet pod is deleted",
			pods:   []corev1.Pod{pod("d", owned("apps/v1", "DaemonSet", "other"), phase(corev1.PodSucceeded))},
			remove: []string{"d"},
		},
		{
			name:   "extensions DaemonSet is no DaemonSet",
			pods:   []corev1.Pod{pod("d", owned("extensions/v1beta1", "DaemonSet", "other"))},
			remove: []string{"d"},
		},
		{
			name: "mirror pods are skipped silently",
			pods: []corev1.Pod{pod("m", mirror)},
		},
		{
			name:     "emptyDir needs --delete-emptydir-data",
			pods:     []corev1.Pod{pod("e", rs, emptyDir)},
			refusals: []string{"cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/e"},
		},
		{
			name:   "--delete-emptydir-data removes it",
			opts:   filterOptions{deleteEmptyDirData: true},
			pods:   []corev1.Pod{pod("e", rs, emptyDir)},
			remove: []string{"e"},
		},
		{
			name:    "warnings of several kinds share a line",
			opts:    filterOptions{deleteEmptyDirData: true, force: true, ignoreDaemonSets: true},
			pods:    []corev1.Pod{pod("e", emptyDir), pod("d", owned("apps/v1", "DaemonSet", "ds"))},
			remove:  []string{"e"},
			warning: "deleting Pods that declare no controller: ns/e; ignoring DaemonSet-managed Pods: ns/d",
		},
		{
			name:     "several refusals",
			pods:     []corev1.Pod{pod("e", rs, emptyDir), pod("u")},
			refusals: []string{"cannot delete Pods that declare no controller (use --force to override): ns/u", "cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/e"},
		},
		{
			name:   "pods deleted long ago are skipped",
			opts:   filterOptions{skipWaitForDeleteTimeoutSeconds: 10},
			pods:   []corev1.Pod{pod("old", rs, deletedAgo(time.Minute)), pod("new", rs, deletedAgo(5*time.Second))},
			remove: []string{"new"},
		},
		{
			name:   "without --skip-wait-for-delete-timeout terminating pods are evicted again",
			pods:   []corev1.Pod{pod("old", rs, deletedAgo(time.Hour))},
			remove: []string{"old"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.daemonSet = lookup
			o.now = func() time.Time { return now }
			ds := o.decide(context.Background(), tt.pods)
			var remove []string
			for _, p := range toRemove(ds) {
				remove = append(remove, p.Name)
			}
			if !reflect.DeepEqual(remove, tt.remove) {
				t.Errorf("removed %q, want %q", remove, tt.remove)
			}
			if got := warnings(ds); got != tt.warning {
				t.Errorf("warning %q, want %q", got, tt.warning)
			}
			var refused []string
			for _, err := range refusals(ds) {
				refused = append(refused, err.Error())
			}
			if !reflect.DeepEqual(refused, tt.refusals) {
				t.Errorf("refusals %q, want %q", refused, tt.refusals)
			}
		})
	}
}

func TestUnschedulablePatch(t *testing.T) {
	if got := string(unschedulablePatch(true)); got != `{"spec":{"unschedulable":true}}` {
		t.Errorf("cordon patch %s", got)
	}
	// Uncordon removes the field rather than writing false, as kubectl's
	// two-way merge patch does.
	if got := string(unschedulablePatch(false)); got != `{"spec":{"unschedulable":null}}` {
		t.Errorf("uncordon patch %s", got)
	}
}
