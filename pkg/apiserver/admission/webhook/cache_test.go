package webhook

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

type vwc = admissionregistrationv1.ValidatingWebhookConfiguration

func cfg(name string) *vwc { return &vwc{ObjectMeta: metav1.ObjectMeta{Name: name}} }

func names(items []*vwc) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Name)
	}
	return out
}

func TestCacheFollowsTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fw := watch.NewFakeWithChanSize(10, false)
	c := NewCache[*vwc](func(context.Context) (watch.Interface, error) { return fw, nil }, clocktesting.NewFakeClock(time.Now()))
	go c.Run(ctx)

	fw.Add(cfg("b"))
	fw.Add(cfg("a"))
	// Until the initial state is complete, List waits.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := c.List(short); err == nil {
		t.Fatalf("List answered before the initial events ended")
	}
	stop()
	fw.Action(watch.Bookmark, &vwc{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	got, err := c.List(ctx)
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("after sync: %v (%v), want [a b]", names(got), err)
	}
	fw.Delete(cfg("a"))
	fw.Add(cfg("c"))
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, _ = c.List(ctx)
		return len(got) == 2 && got[0].Name == "b" && got[1].Name == "c", nil
	})
	if err != nil {
		t.Fatalf("after changes: %v, want [b c]", names(got))
	}
}
