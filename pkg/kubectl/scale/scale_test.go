package scale

import (
	"errors"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"
)

var deployments = schema.GroupResource{Group: "apps", Resource: "deployments"}

// scales answers every scale Get with get, after delay.
func scales(delay time.Duration, get func() (*autoscalingv1.Scale, error)) *fake.FakeScaleClient {
	c := &fake.FakeScaleClient{}
	c.AddReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(delay)
		s, err := get()
		return true, s, err
	})
	return c
}

func scaleOf(spec, status int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: spec}, Status: autoscalingv1.ScaleStatus{Replicas: status}}
}

func TestWaitForSizeReportsTheDeadlineAsTheTimeout(t *testing.T) {
	// The poll that ends at the deadline fails the way client-go's rate
	// limiter does when it would have to wait past it.
	sc := scales(200*time.Millisecond, func() (*autoscalingv1.Scale, error) {
		return nil, errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	})
	err := waitForSize(sc, deployments, "default", "web", 5, 50*time.Millisecond)
	if err == nil || err.Error() != `timed out waiting for "web" to be synced` {
		t.Fatalf("err = %v, want the timeout", err)
	}
}

func TestWaitForSizeAtTheDeadlineTick(t *testing.T) {
	// --timeout=1s polls every second: the second poll comes at the
	// deadline, when the limiter refuses at once although the context's
	// timer may not have fired yet.
	calls := 0
	sc := scales(0, func() (*autoscalingv1.Scale, error) {
		if calls++; calls == 1 {
			return scaleOf(5, 3), nil
		}
		return nil, errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	})
	for range 3 {
		calls = 0
		err := waitForSize(sc, deployments, "default", "web", 5, time.Second)
		if err == nil || err.Error() != `timed out waiting for "web" to be synced` {
			t.Fatalf("err = %v, want the timeout", err)
		}
	}
}

func TestWaitForSize(t *testing.T) {
	tests := []struct {
		name    string
		scale   *autoscalingv1.Scale
		wantErr string
	}{
		{"status reached", scaleOf(5, 5), ""},
		{"size changed by someone else", scaleOf(7, 3), ""},
		{"never reached", scaleOf(5, 3), `timed out waiting for "web" to be synced`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scales(0, func() (*autoscalingv1.Scale, error) { return tt.scale, nil })
			err := waitForSize(sc, deployments, "default", "web", 5, 100*time.Millisecond)
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
