package job

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// isIndexed says whether job runs one pod per completion index.
func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion && job.Spec.Completions != nil
}

// withCompletionIndex gives an Indexed Job's pod what upstream does: the
// hostname <job>-<index> and JOB_COMPLETION_INDEX in every container, read
// from the index label as upstream's pods do since PodIndexLabel went GA.
func withCompletionIndex(jobName string, index int, spec *corev1.PodSpec) {
	if spec.Hostname == "" {
		spec.Hostname = fmt.Sprintf("%s-%d", jobName, index)
	}
	env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	add := func(cs []corev1.Container) {
		for i := range cs {
			has := false
			for _, e := range cs[i].Env {
				has = has || e.Name == env.Name
			}
			if !has {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
	add(spec.InitContainers)
	add(spec.Containers)
}

// podIndex is the completion index a pod runs, or -1.
func podIndex(p *corev1.Pod, completions int) int {
	i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil || i < 0 || i >= completions {
		return -1
	}
	return i
}

// countable says whether p's end counts for job: an Indexed Job counts
// only the pods with an index in range.
func countable(job *batchv1.Job, p *corev1.Pod) bool {
	return !isIndexed(job) || podIndex(p, int(*job.Spec.Completions)) >= 0
}

// parseIndexes reads an index list such as status.completedIndexes or a
// success policy's succeededIndexes ("0-2,5"), keeping those below
// completions and skipping parts that do not parse, as upstream does.
func parseIndexes(s string, completions int) map[int]bool {
	set := map[int]bool{}
	if s == "" {
		return set
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, errA := strconv.Atoi(lo)
		b, errB := a, error(nil)
		if found {
			b, errB = strconv.Atoi(hi)
		}
		if errA != nil || errB != nil {
			continue
		}
		for i := max(a, 0); i <= b && i < completions; i++ {
			set[i] = true
		}
	}
	return set
}

// completedIndexes merges the indexes status already records with those
// of succeeded pods.
func completedIndexes(recorded string, completions int, pods []*corev1.Pod) map[int]bool {
	done := parseIndexes(recorded, completions)
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded {
			if i := podIndex(p, completions); i >= 0 {
				done[i] = true
			}
		}
	}
	return done
}

// formatIndexes writes indexes as upstream's status.completedIndexes:
// ascending, runs of three or more as "a-b", e.g. "0-2,5,7,8".
func formatIndexes(set map[int]bool, completions int) string {
	var idx []int
	for i, in := range set {
		if in && i < completions {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		switch j - i {
		case 0:
			parts = append(parts, strconv.Itoa(idx[i]))
		case 1:
			parts = append(parts, strconv.Itoa(idx[i]), strconv.Itoa(idx[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// pendingIndexes are the indexes neither completed nor run by an active
// pod, lowest first.
func pendingIndexes(completions int, done map[int]bool, active []*corev1.Pod) []int {
	running := map[int]bool{}
	for _, p := range active {
		if i := podIndex(p, completions); i >= 0 {
			running[i] = true
		}
	}
	out := []int{}
	for i := 0; i < completions; i++ {
		if !done[i] && !running[i] {
			out = append(out, i)
		}
	}
	return out
}

// strayPods are the active pods of an Indexed Job to delete whatever the
// count, as upstream does: those without an index in range (the Job was
// shrunk below it, or the annotation is mangled), and for an index run by
// more than one pod all but the most useful. Without this a shrunk Job
// deleted in-range pods and kept out-of-range ones, whose places then held
// back the pods of the indexes it still needed.
func strayPods(active []*corev1.Pod, completions int) []*corev1.Pod {
	var stray []*corev1.Pod
	kept := map[int]*corev1.Pod{}
	for _, p := range active {
		i := podIndex(p, completions)
		switch prev, dup := kept[i]; {
		case i < 0:
			stray = append(stray, p)
		case !dup:
			kept[i] = p
		case controllerutil.LessUseful(prev, p):
			stray = append(stray, prev)
			kept[i] = p
		default:
			stray = append(stray, p)
		}
	}
	return stray
}

func union(a, b map[int]bool) map[int]bool {
	out := maps.Clone(a)
	if out == nil {
		out = map[int]bool{}
	}
	maps.Copy(out, b)
	return out
}
