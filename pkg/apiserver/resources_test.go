package apiserver

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/api"
)

// TestResourceTypes checks, for every served resource, that the kind, its
// list and the table agree with the Go types, as discovery and decoding
// rely on.
func TestResourceTypes(t *testing.T) {
	scheme := api.NewScheme()
	for _, r := range Resources(clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))) {
		t.Run(r.GroupVersionResource().String(), func(t *testing.T) {
			gvks, _, err := scheme.ObjectKinds(r.New())
			if err != nil || len(gvks) != 1 || gvks[0] != r.GroupVersionKind() {
				t.Errorf("New() is %v (%v), want %v", gvks, err, r.GroupVersionKind())
			}
			gvks, _, err = scheme.ObjectKinds(r.NewList())
			if want := r.GroupVersion.WithKind(r.Kind + "List"); err != nil || len(gvks) != 1 || gvks[0] != want {
				t.Errorf("NewList() is %v (%v), want %v", gvks, err, want)
			}
			if r.Table == nil {
				return
			}
			cells, err := r.Table.Cells(r.New())
			if err != nil || len(cells) != len(r.Table.Columns()) {
				t.Errorf("an empty object renders %d cells (%v) for %d columns", len(cells), err, len(r.Table.Columns()))
			}
		})
	}
}
