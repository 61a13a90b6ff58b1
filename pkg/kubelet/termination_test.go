package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeStatus is the runtime's status of the pod's running container name.
func (h *harness) runtimeStatus(pod *v1.Pod, name string) *runtimeapi.ContainerStatus {
	h.t.Helper()
	c := h.running(pod, name)
	if c == nil {
		h.t.Fatalf("container %s is not running", name)
	}
	s, err := h.rt.ContainerStatus(context.Background(), c.Id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// writeTerminationLog writes what the container would write at its
// terminationMessagePath.
func writeTerminationLog(t *testing.T, s *runtimeapi.ContainerStatus, containerPath, msg string) {
	t.Helper()
	for _, m := range s.Mounts {
		if m.ContainerPath == containerPath {
			fi, err := os.Stat(m.HostPath)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o666 {
				t.Fatalf("termination log mode %v, want writable by any user", fi.Mode().Perm())
			}
			if err := os.WriteFile(m.HostPath, []byte(msg), 0o666); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no mount at %s in %+v", containerPath, s.Mounts)
}

// writeCRILog writes lines as the runtime would log stdout.
func writeCRILog(t *testing.T, s *runtimeapi.ContainerStatus, lines ...string) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "2026-01-01T00:00:00.000000000Z stdout F %s\n", l)
	}
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.LogPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTerminationMessageFromFileAndFromLogs(t *testing.T) {
	h := newHarness(t)
	pod := testPod("term", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Containers = []v1.Container{
			{Name: "file", Image: testImage, TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile},
			{Name: "logs", Image: testImage, TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError},
			{Name: "quiet", Image: testImage, TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile},
		}
	})
	h.add(pod)
	h.sync(pod)

	file := h.runtimeStatus(pod, "file")
	writeTerminationLog(t, file, "/dev/termination-log", "my message\n")
	h.rt.Exit(file.Id, 3)
	logs := h.runtimeStatus(pod, "logs")
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	writeCRILog(t, logs, many...)
	h.rt.Exit(logs.Id, 1)
	quiet := h.runtimeStatus(pod, "quiet")
	writeCRILog(t, quiet, "not a termination message")
	h.rt.Exit(quiet.Id, 1)
	h.sync(pod)

	s := h.status(pod)
	msg := func(i int) string {
		term := s.ContainerStatuses[i].State.Terminated
		if term == nil {
			t.Fatalf("%s: state %+v", s.ContainerStatuses[i].Name, s.ContainerStatuses[i].State)
		}
		return term.Message
	}
	if got := msg(0); got != "my message\n" {
		t.Errorf("File policy: message %q, want what the container wrote", got)
	}
	// FallbackToLogsOnError with nothing written: the last 80 log lines.
	want := strings.Join(many[20:], "\n") + "\n"
	if got := msg(1); got != want {
		t.Errorf("FallbackToLogsOnError: message %q, want the last 80 lines", got)
	}
	if got := msg(2); got != "" {
		t.Errorf("File policy without a file: message %q, want none", got)
	}
}

func TestTerminationMessageOfTheLastRunStaysAfterARestart(t *testing.T) {
	h := newHarness(t)
	pod := testPod("term-restart", func(p *v1.Pod) {
		p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	})
	h.add(pod)
	h.sync(pod)
	first := h.runtimeStatus(pod, "main")
	writeTerminationLog(t, first, "/dev/termination-log", "first run failed")
	h.rt.Exit(first.Id, 1)
	h.sync(pod)
	second := h.runtimeStatus(pod, "main")
	for _, m := range second.Mounts {
		if m.ContainerPath == "/dev/termination-log" {
			if data, _ := os.ReadFile(m.HostPath); len(data) != 0 {
				t.Fatalf("the restarted container starts with the old message %q", data)
			}
		}
	}
	cs := h.status(pod).ContainerStatuses[0]
	if cs.State.Running == nil || cs.LastTerminationState.Terminated == nil ||
		cs.LastTerminationState.Terminated.Message != "first run failed" {
		t.Fatalf("after the restart: %+v", cs)
	}
}
