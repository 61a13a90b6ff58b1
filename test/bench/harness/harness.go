// Package harness holds what the benchmark commands under test/bench share:
// the child processes they start (with their logs, CPU time and memory),
// the cluster-admin credential they talk to an apiserver with, free
// loopback ports and percentiles.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kube-lite/kube-lite/pkg/pki"
)

// Process is one program a bench started, with its log.
type Process struct {
	cmd *exec.Cmd
	// Exited is closed when the program has ended.
	Exited chan struct{}
}

// StartProcess runs bin with args, writing its stdout and stderr to
// logPath; each stderr line is also passed to onLine (may be nil).
func StartProcess(bin string, args []string, logPath string, onLine func(string)) (*Process, error) {
	cmd := exec.Command(bin, args...)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, Exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if onLine != nil {
				onLine(line)
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.Exited) }()
	return p, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop ends the process: SIGTERM, then SIGKILL if it is still running 10s
// later.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.Exited
	}
}

// Admin makes, in dir, the CA an apiserver trusts for client certificates
// and the bench's own certificate from it: a cluster admin, as a real client
// would be, so that authentication and authorization are part of what is
// measured.
func Admin(dir string) (caFile string, admin *pki.KeyPair, ca *pki.CA, err error) {
	clientCADir := filepath.Join(dir, "client-ca")
	ca, err = pki.EnsureCA(clientCADir, pki.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return "", nil, nil, err
	}
	admin, err = pki.IssueCert(ca, pki.CertSpec{CommonName: "bench-admin", Organizations: []string{"system:masters"}, Usages: []pki.Usage{pki.UsageClient}})
	if err != nil {
		return "", nil, nil, err
	}
	return filepath.Join(clientCADir, pki.CACertFile), admin, ca, nil
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Percentile of sorted durations, nearest rank.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// ProcessCPU is utime + stime of pid from /proc/pid/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it start
	// after its closing parenthesis. utime and stime are fields 14 and 15.
	rest := string(data[bytes.LastIndexByte(data, ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	// Linux reports clock ticks, USER_HZ, which is 100 on every
	// architecture Go supports.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// RSS is pid's resident set (VmRSS) in MiB.
func RSS(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// Parallel calls f(0) ... f(n-1) from workers goroutines and returns the
// first error; after one, no new call starts.
func Parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var failed atomic.Bool
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil || failed.Load() {
					return
				}
				if err := f(i); err != nil {
					failed.Store(true)
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
