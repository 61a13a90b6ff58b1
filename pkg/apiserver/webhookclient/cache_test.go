package webhookclient

import (
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		ttl    time.Duration
		getKey string
		getAt  time.Duration // after the Put
		want   bool
	}{
		{name: "fresh", ttl: time.Minute, getKey: "a", getAt: 59 * time.Second, want: true},
		{name: "expired at ttl", ttl: time.Minute, getKey: "a", getAt: time.Minute},
		{name: "other key", ttl: time.Minute, getKey: "b"},
		{name: "zero ttl stores nothing", ttl: 0, getKey: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache[string]()
			c.Put([]byte("a"), "answer", t0, tt.ttl)
			got, ok := c.Get([]byte(tt.getKey), t0.Add(tt.getAt))
			if ok != tt.want {
				t.Fatalf("Get ok = %v, want %v", ok, tt.want)
			}
			if ok && got != "answer" {
				t.Fatalf("Get = %q, want %q", got, "answer")
			}
		})
	}
}
