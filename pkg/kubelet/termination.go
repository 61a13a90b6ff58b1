package kubelet

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/server"
)

// Upstream's limits on a termination message: what the container wrote to
// its terminationMessagePath, or the tail of its log.
const (
	maxTerminationMessageBytes    = 4096
	maxTerminationMessageLogBytes = 2048
	maxTerminationMessageLogLines = 80
)

// terminationMessageMount creates the host file that a container sees at
// its terminationMessagePath (an empty path means none). Each container
// instance gets its own file, so that a restart does not overwrite what the
// previous instance wrote.
func (kl *Kubelet) terminationMessageMount(pod *v1.Pod, c *v1.Container) (*runtimeapi.Mount, error) {
	if c.TerminationMessagePath == "" {
		return nil, nil
	}
	dir := filepath.Join(kl.cfg.RootDir, "pods", string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create termination message dir: %w", err)
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("name termination message file: %w", err)
	}
	path := filepath.Join(dir, hex.EncodeToString(id[:]))
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return nil, fmt.Errorf("create termination message file: %w", err)
	}
	// Writable by whatever user the container runs as, whatever the umask.
	if err := os.Chmod(path, 0o666); err != nil {
		return nil, fmt.Errorf("create termination message file: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: path}, nil
}

// terminationMessage is what an exited container leaves in its status
// message, like upstream: the runtime's message, then the file the
// container wrote at terminationMessagePath, or, with
// FallbackToLogsOnError, the tail of its log when it failed and wrote
// nothing. It is read once per container instance.
func (kl *Kubelet) terminationMessage(st *podState, spec *v1.Container, c *runtimeapi.ContainerStatus) string {
	if msg, ok := st.termMessages[c.Id]; ok {
		return msg
	}
	msg := ""
	if spec != nil {
		msg = readTerminationMessage(spec, c)
	}
	if c.Message != "" && msg != "" {
		msg = c.Message + ": " + msg
	} else if c.Message != "" {
		msg = c.Message
	}
	if st.termMessages == nil {
		st.termMessages = map[string]string{}
	}
	st.termMessages[c.Id] = msg
	return msg
}

func readTerminationMessage(spec *v1.Container, c *runtimeapi.ContainerStatus) string {
	fallback := spec.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError && c.ExitCode != 0
	if spec.TerminationMessagePath != "" {
		for _, m := range c.Mounts {
			if m.ContainerPath != spec.TerminationMessagePath {
				continue
			}
			data, err := readTail(m.HostPath, maxTerminationMessageBytes)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Sprintf("Error on reading termination log %s: %v", m.HostPath, err)
			}
			if len(data) > 0 || !fallback {
				return string(data)
			}
			break
		}
	}
	if !fallback || c.LogPath == "" {
		return ""
	}
	f, err := os.Open(c.LogPath)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	opts := server.LogOptions{TailLines: maxTerminationMessageLogLines}
	if err := server.CopyLog(context.Background(), &buf, f, opts, nil, 0); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	out := buf.Bytes()
	if len(out) > maxTerminationMessageLogBytes {
		out = out[len(out)-maxTerminationMessageLogBytes:]
	}
	return string(out)
}

// readTail reads at most the last max bytes of a file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}
