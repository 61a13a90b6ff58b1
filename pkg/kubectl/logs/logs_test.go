package logs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// stream is a log request: its first refusals fail Stream (or every call
// fails with always), then it serves body, after hold if set (or until the
// stream's context ends).
type stream struct {
	refusals []error
	always   error
	calls    int
	body     string
	hold     time.Duration
}

func (s *stream) DoRaw(context.Context) ([]byte, error) { return nil, errors.New("not used") }

func (s *stream) Stream(ctx context.Context) (io.ReadCloser, error) {
	s.calls++
	if s.always != nil {
		return nil, s.always
	}
	if s.calls <= len(s.refusals) {
		return nil, s.refusals[s.calls-1]
	}
	if s.hold > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.hold):
		}
	}
	return io.NopCloser(strings.NewReader(s.body)), nil
}

func waiting(msg string) error { return apierrors.NewBadRequest(msg) }

func following(timeout time.Duration) (*Options, *bytes.Buffer, *bytes.Buffer) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	return &Options{Follow: true, PodTimeout: timeout, retryEvery: time.Millisecond, streams: streams}, out, errOut
}

// TestFollowWaitsForTheContainer: with -f, kubectl asks again while the
// apiserver says the container has not started, showing each answer, and
// then follows it; without -f the first refusal is the error.
func TestFollowWaitsForTheContainer(t *testing.T) {
	msg := `container "c" in pod "p" is waiting to start: ContainerCreating`
	o, out, errOut := following(time.Minute)
	s := &stream{refusals: []error{waiting(msg), waiting(msg)}, body: "started\n"}
	if err := o.consume(context.Background(), corev1.ObjectReference{}, s, o.streams.Out, o.streams.ErrOut); err != nil {
		t.Fatalf("consume: %v", err)
	}
	if out.String() != "started\n" || errOut.String() != msg+"\n"+msg+"\n" {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}

	o, _, errOut = following(time.Minute)
	o.Follow = false
	s = &stream{refusals: []error{waiting(msg)}, body: "started\n"}
	if err := o.consume(context.Background(), corev1.ObjectReference{}, s, o.streams.Out, o.streams.ErrOut); err == nil || err.Error() != msg || s.calls != 1 || errOut.Len() != 0 {
		t.Fatalf("without -f: %v after %d calls, stderr %q", err, s.calls, errOut)
	}
}

// TestFollowGivesUp: the wait ends with --pod-running-timeout, as
// kubectl's ("context deadline exceeded"); an error that is not the
// apiserver's ends it at once.
func TestFollowGivesUp(t *testing.T) {
	o, _, errOut := following(20 * time.Millisecond)
	never := &stream{always: waiting("pod p does not have a host assigned")}
	err := o.consume(context.Background(), corev1.ObjectReference{}, never, o.streams.Out, o.streams.ErrOut)
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "context deadline exceeded" || !strings.HasPrefix(errOut.String(), "pod p does not have a host assigned\n") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}

	o, _, errOut = following(time.Minute)
	broken := &stream{refusals: []error{errors.New("connection reset"), nil}, body: "x\n"}
	if err := o.consume(context.Background(), corev1.ObjectReference{}, broken, o.streams.Out, o.streams.ErrOut); err == nil || err.Error() != "connection reset" || broken.calls != 1 || errOut.String() != "connection reset\n" {
		t.Fatalf("err %v after %d calls, stderr %q", err, broken.calls, errOut)
	}
}

// TestFollowOutlivesTheStartTimeout: --pod-running-timeout bounds the
// wait for the stream, not how long it is followed.
func TestFollowOutlivesTheStartTimeout(t *testing.T) {
	o, out, _ := following(time.Millisecond)
	s := &stream{body: "late\n", hold: 100 * time.Millisecond}
	if err := o.consume(context.Background(), corev1.ObjectReference{}, s, o.streams.Out, o.streams.ErrOut); err != nil || out.String() != "late\n" {
		t.Fatalf("err %v, stdout %q", err, out)
	}
}

// TestIgnoreErrors: kubectl reports an ignored stream's error on standard
// output and goes on, with or without -f.
func TestIgnoreErrors(t *testing.T) {
	for _, follow := range []bool{false, true} {
		o, out, errOut := following(time.Minute)
		o.Follow, o.IgnoreErrors = follow, true
		s := &stream{refusals: []error{waiting("no")}}
		if err := o.consume(context.Background(), corev1.ObjectReference{}, s, o.streams.Out, o.streams.ErrOut); err != nil || out.String() != "error: no\n" || errOut.Len() != 0 || s.calls != 1 {
			t.Fatalf("follow=%v: err %v after %d calls, stdout %q, stderr %q", follow, err, s.calls, out, errOut)
		}
	}
}

func TestPodRunningTimeoutMustBePositive(t *testing.T) {
	o := &Options{PodTimeout: 0}
	if err := o.checkArgs([]string{"p"}); err == nil || err.Error() != "--pod-running-timeout must be higher than zero" {
		t.Fatalf("checkArgs: %v", err)
	}
	o.PodTimeout = time.Second
	if err := o.checkArgs([]string{"p"}); err != nil {
		t.Fatalf("checkArgs: %v", err)
	}
}
