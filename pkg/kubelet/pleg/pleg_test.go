package pleg

import (
	"context"
	"sort"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"
)

type lister struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func (l *lister) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return l.sandboxes, nil
}

func (l *lister) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return l.containers, nil
}

func ctr(id, pod string, s runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, State: s, Labels: map[string]string{PodUIDLabel: pod}}
}

func TestRelistWakesOnlyChangedPods(t *testing.T) {
	l := &lister{containers: []*runtimeapi.Container{
		ctr("a1", "pod-a", runtimeapi.ContainerState_CONTAINER_RUNNING),
		ctr("b1", "pod-b", runtimeapi.ContainerState_CONTAINER_RUNNING),
		ctr("c1", "pod-c", runtimeapi.ContainerState_CONTAINER_RUNNING),
	}}
	var woken []string
	p := New(l, testclock.NewFakeClock(time.Now()), time.Second, func(uid string) { woken = append(woken, uid) })
	ctx := context.Background()
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if len(woken) != 0 {
		t.Fatalf("first relist woke %v", woken)
	}
	// a exits, b is removed, c is unchanged, d appears.
	l.containers = []*runtimeapi.Container{
		ctr("a1", "pod-a", runtimeapi.ContainerState_CONTAINER_EXITED),
		ctr("c1", "pod-c", runtimeapi.ContainerState_CONTAINER_RUNNING),
		ctr("d1", "pod-d", runtimeapi.ContainerState_CONTAINER_CREATED),
	}
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	sort.Strings(woken)
	if want := []string{"pod-a", "pod-b", "pod-d"}; len(woken) != 3 || woken[0] != want[0] || woken[1] != want[1] || woken[2] != want[2] {
		t.Fatalf("woken %v, want %v", woken, want)
	}
	if ok, _ := p.Healthy(time.Minute); !ok {
		t.Fatal("PLEG unhealthy right after a relist")
	}
}
