//go:build e2e

package e2eutil

import "testing"

func TestLastLines(t *testing.T) {
	tests := []struct {
		name string
		log  string
		n    int
		want string
	}{
		{"shorter than n", "a\nb\n", 3, "a\nb"},
		{"longer than n, trailing newline", "a\nb\nc\nd\n", 2, "c\nd"},
		{"longer than n, no trailing newline", "a\nb\nc", 1, "c"},
		{"empty", "", 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LastLines(tt.log, tt.n); got != tt.want {
				t.Errorf("LastLines(%q, %d) = %q, want %q", tt.log, tt.n, got, tt.want)
			}
		})
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 3, "def"},
		{"ab", 3, "ab"},
	}
	for _, tt := range tests {
		if got := string(Tail([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
