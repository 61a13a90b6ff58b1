package kubelet

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// refRecorder keeps each event with the field path it points at.
type refRecorder struct{ events []string }

func (r *refRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	path := "-"
	if ref, ok := obj.(*v1.ObjectReference); ok {
		path = ref.FieldPath
	}
	r.events = append(r.events, fmt.Sprintf("%s %s %s: %s", eventType, reason, path, message))
}

func (r *refRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...interface{}) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *refRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...interface{}) {
	r.Eventf(obj, eventType, reason, format, args...)
}

// kubectl describe prints a container event as "spec.containers{main}:
// Container started"; upstream's kubelet records them this way.
func TestContainerEventsNameTheContainer(t *testing.T) {
	h := newHarness(t)
	rec := &refRecorder{}
	h.kl.recorder = rec
	pod := testPod("ev", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage, Command: []string{"true"}}}
	})
	h.add(pod)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "setup").Id, 0)
	h.sync(pod)

	got := strings.Join(rec.events, "\n")
	for _, want := range []string{
		`Normal Pulled spec.initContainers{setup}: Container image "` + testImage + `" already present on machine and can be accessed by the pod`,
		"Normal Created spec.initContainers{setup}: Container created",
		"Normal Started spec.initContainers{setup}: Container started",
		`Normal Pulled spec.containers{main}: Container image "` + testImage + `" already present on machine and can be accessed by the pod`,
		"Normal Created spec.containers{main}: Container created",
		"Normal Started spec.containers{main}: Container started",
	} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("no event %q in:\n%s", want, got)
		}
	}
}
