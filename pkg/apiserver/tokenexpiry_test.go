package apiserver

import (
	"testing"

	"k8s.io/utils/ptr"
)

// Only the automatic volume's request gets the extended expiry: exactly
// 3607 s, bound to a pod, for the API's audiences, with the flag on.
func TestExtendedTokenExpiry(t *testing.T) {
	api := []string{"https://kubernetes.default.svc.cluster.local", "kube-lite"}
	tests := []struct {
		name      string
		enabled   bool
		seconds   *int64
		pod       bool
		audiences []string
		want      bool
	}{
		{"automatic volume", true, ptr.To[int64](3607), true, api[:1], true},
		{"every API audience", true, ptr.To[int64](3607), true, api, true},
		{"flag off", false, ptr.To[int64](3607), true, api[:1], false},
		{"an hour", true, ptr.To[int64](3600), true, api[:1], false},
		{"no expiration asked", true, nil, true, api[:1], false},
		{"not bound to a pod", true, ptr.To[int64](3607), false, api[:1], false},
		{"another audience", true, ptr.To[int64](3607), true, []string{api[0], "vault"}, false},
	}
	for _, tt := range tests {
		if got := extendedTokenExpiry(tt.enabled, tt.seconds, tt.pod, tt.audiences, api); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
