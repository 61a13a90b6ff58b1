package prober

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

type execResult struct {
	stdout, stderr string
	code           int32
}

func (e execResult) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
	return []byte(e.stdout), []byte(e.stderr), e.code, nil
}

func TestFailedExecProbeSaysWhatTheCommandPrinted(t *testing.T) {
	r := NewNetRunner(execResult{stderr: "cat: can't open '/tmp/healthy': No such file or directory\n", code: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, msg := r.Run(ctx, Target{}, &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}})
	if res != Failure || msg != "cat: can't open '/tmp/healthy': No such file or directory\n" {
		t.Fatalf("result %v, message %q", res, msg)
	}
}
