package validation

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"
)

func TestFrozenData(t *testing.T) {
	tests := []struct {
		name              string
		immutable, oldImm *bool
		maps              []DataChange
		want              []string
	}{
		{name: "mutable object may change", oldImm: ptr.To(false), maps: []DataChange{{Field: "data", New: "a", Old: "b"}}},
		{name: "unset old may change", maps: []DataChange{{Field: "data", New: "a", Old: "b"}}},
		{name: "immutable unchanged", immutable: ptr.To(true), oldImm: ptr.To(true), maps: []DataChange{{Field: "data"}}},
		{name: "immutable may not be unset", oldImm: ptr.To(true), want: []string{"immutable"}},
		{name: "frozen maps may not change", immutable: ptr.To(true), oldImm: ptr.To(true),
			maps: []DataChange{{Field: "data", New: "a", Old: "b"}, {Field: "binaryData"}, {Field: "other", New: "a", Old: "b"}},
			want: []string{"data", "other"}},
		{name: "both", immutable: ptr.To(false), oldImm: ptr.To(true), maps: []DataChange{{Field: "data", New: "a", Old: "b"}},
			want: []string{"immutable", "data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range FrozenData(tt.immutable, tt.oldImm, tt.maps...) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("error fields = %v, want %v", got, tt.want)
			}
		})
	}
}
