package tableutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		created metav1.Time
		want    string
	}{
		{"zero", metav1.Time{}, "<unknown>"},
		{"seconds", metav1.NewTime(now.Add(-42 * time.Second)), "42s"},
		{"minutes and seconds", metav1.NewTime(now.Add(-3*time.Minute - 2*time.Second)), "3m2s"},
		{"hours", metav1.NewTime(now.Add(-4 * time.Hour)), "4h"},
		{"days", metav1.NewTime(now.Add(-12 * 24 * time.Hour)), "12d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Age(tt.created, now); got != tt.want {
				t.Errorf("Age = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConvertorRejectsOtherTypes(t *testing.T) {
	c := New([]metav1.TableColumnDefinition{NameColumn()}, func(p *corev1.Pod) []interface{} {
		return []interface{}{p.Name}
	})
	cells, err := c.Cells(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	if err != nil || len(cells) != 1 || cells[0] != "web" {
		t.Fatalf("Cells(pod) = %v, %v; want [web]", cells, err)
	}
	if _, err := c.Cells(&corev1.Node{}); err == nil {
		t.Fatal("Cells(node) on a pod table: want an error")
	}
}

func TestContainersAndImages(t *testing.T) {
	names, images := ContainersAndImages([]corev1.Container{{Name: "a", Image: "x:1"}, {Name: "b", Image: "y"}})
	if names != "a,b" || images != "x:1,y" {
		t.Fatalf("got %q %q", names, images)
	}
}
