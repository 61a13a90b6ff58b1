// Package fake is an in-memory CRI runtime for the kubelet's unit tests:
// sandboxes and containers change state only when the kubelet or the test
// says so.
package fake

import (
	"context"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Runtime is a fake CRI runtime and image service.
type Runtime struct {
	Clock clock.PassiveClock

	mu         sync.Mutex
	next       int
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]bool
	// Pullable images succeed in PullImage; others fail like a missing repository.
	pullable map[string]bool
	// Calls counts calls by method name.
	Calls map[string]int
	// ExecResult is what ExecSync returns, per command's first word.
	ExecResult map[string]int32
	// NextIP is the address the next sandbox gets.
	ipCounter int
	statusErr error
}

type sandbox struct {
	s      *runtimeapi.PodSandbox
	config *runtimeapi.PodSandboxConfig
	ip     string
	// netUp says the sandbox still holds its network (its IP): only
	// StopPodSandbox and RemovePodSandbox release it, as containerd's CNI
	// teardown does, not the sandbox's process dying.
	netUp bool
}

type container struct {
	c      *runtimeapi.Container
	config *runtimeapi.ContainerConfig
	status *runtimeapi.ContainerStatus
}

// New returns an empty runtime with the given images present.
func New(c clock.PassiveClock, images ...string) *Runtime {
	r := &Runtime{Clock: c, sandboxes: map[string]*sandbox{}, containers: map[string]*container{},
		images: map[string]bool{}, pullable: map[string]bool{}, Calls: map[string]int{}, ExecResult: map[string]int32{}}
	for _, i := range images {
		r.images[i] = true
	}
	return r
}

// AllowPull makes image pullable.
func (r *Runtime) AllowPull(image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pullable[image] = true
}

func (r *Runtime) id(prefix string) string {
	r.next++
	return fmt.Sprintf("%s%04d", prefix, r.next)
}

func (r *Runtime) call(name string) {
	r.Calls[name]++
}

func (r *Runtime) Version(context.Context) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1.0", RuntimeApiVersion: "v1"}, nil
}

// SetStatusError makes Status fail with err (nil: answer again), as a
// stopped containerd's socket does.
func (r *Runtime) SetStatusError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statusErr = err
}

func (r *Runtime) Status(context.Context) (*runtimeapi.RuntimeStatus, error) {
	r.mu.Lock()
	err := r.statusErr
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
	}}, nil
}

func (r *Runtime) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("RunPodSandbox")
	// As containerd, a sandbox's name (pod and attempt) is reserved while
	// the sandbox exists, whatever its state.
	m := cfg.GetMetadata()
	for id, s := range r.sandboxes {
		o := s.s.GetMetadata()
		if o.GetName() == m.GetName() && o.GetNamespace() == m.GetNamespace() && o.GetUid() == m.GetUid() && o.GetAttempt() == m.GetAttempt() {
			return "", fmt.Errorf("failed to reserve sandbox name %q: reserved for %q", fmt.Sprintf("%s_%s_%s_%d", m.GetName(), m.GetNamespace(), m.GetUid(), m.GetAttempt()), id)
		}
	}
	id := r.id("sb")
	r.ipCounter++
	r.sandboxes[id] = &sandbox{
		s: &runtimeapi.PodSandbox{Id: id, Metadata: cfg.Metadata, State: runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: r.Clock.Now().UnixNano(), Labels: cfg.Labels, Annotations: cfg.Annotations},
		config: cfg,
		ip:     fmt.Sprintf("10.244.0.%d", r.ipCounter+1),
		netUp:  true,
	}
	return id, nil
}

func (r *Runtime) StopPodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("StopPodSandbox")
	s, ok := r.sandboxes[id]
	if !ok {
		return nil
	}
	s.s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	s.netUp = false
	for _, c := range r.containers {
		if c.c.PodSandboxId == id && c.c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exit(c, 137, "Error")
		}
	}
	return nil
}

// KillSandbox makes a sandbox die as its pause process would when killed by
// hand: it is no longer ready, its containers run on, its network is kept
// until the kubelet stops the sandbox.
func (r *Runtime) KillSandbox(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sandboxes[id]; ok {
		s.s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
}

// NetworkHeld lists, sorted, the sandboxes that still hold their network.
func (r *Runtime) NetworkHeld() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, s := range r.sandboxes {
		if s.netUp {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (r *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("RemovePodSandbox")
	delete(r.sandboxes, id)
	for cid, c := range r.containers {
		if c.c.PodSandboxId == id {
			delete(r.containers, cid)
		}
	}
	return nil
}

func (r *Runtime) PodSandboxStatus(_ context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s not found", id)
	}
	return &runtimeapi.PodSandboxStatus{Id: id, Metadata: s.s.Metadata, State: s.s.State, CreatedAt: s.s.CreatedAt,
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: s.ip}, Labels: s.s.Labels, Annotations: s.s.Annotations}, nil
}

func matchLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func (r *Runtime) ListPodSandbox(_ context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("ListPodSandbox")
	var out []*runtimeapi.PodSandbox
	for _, s := range r.sandboxes {
		if f != nil && !matchLabels(s.s.Labels, f.LabelSelector) {
			continue
		}
		out = append(out, proto.Clone(s.s).(*runtimeapi.PodSandbox))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (r *Runtime) CreateContainer(_ context.Context, podID string, cfg *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("CreateContainer")
	sandbox, ok := r.sandboxes[podID]
	if !ok {
		return "", fmt.Errorf("sandbox %s not found", podID)
	}
	// containerd's rule: privileged containers need a privileged sandbox.
	if cfg.GetLinux().GetSecurityContext().GetPrivileged() && !sandbox.config.GetLinux().GetSecurityContext().GetPrivileged() {
		return "", fmt.Errorf("no privileged container allowed in sandbox")
	}
	if !r.images[cfg.Image.Image] {
		return "", fmt.Errorf("image %s not present", cfg.Image.Image)
	}
	id := r.id("c")
	now := r.Clock.Now().UnixNano()
	c := &container{
		c: &runtimeapi.Container{Id: id, PodSandboxId: podID, Metadata: cfg.Metadata, Image: cfg.Image, ImageRef: "sha256:" + cfg.Image.Image,
			State: runtimeapi.ContainerState_CONTAINER_CREATED, CreatedAt: now, Labels: cfg.Labels, Annotations: cfg.Annotations},
		config: cfg,
	}
	c.status = &runtimeapi.ContainerStatus{Id: id, Metadata: cfg.Metadata, State: c.c.State, CreatedAt: now, Image: cfg.Image,
		ImageRef: c.c.ImageRef, Labels: cfg.Labels, Annotations: cfg.Annotations, LogPath: cfg.LogPath, Mounts: cfg.Mounts}
	// Like containerd: the log path is absolute, under the sandbox's log directory.
	if sb != nil && sb.LogDirectory != "" {
		c.status.LogPath = path.Join(sb.LogDirectory, cfg.LogPath)
	}
	r.containers[id] = c
	return id, nil
}

func (r *Runtime) StartContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("StartContainer")
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("container %s not found", id)
	}
	c.c.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.status.State = c.c.State
	c.status.StartedAt = r.Clock.Now().UnixNano()
	return nil
}

func (r *Runtime) exit(c *container, code int32, reason string) {
	c.c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.status.State = c.c.State
	c.status.ExitCode = code
	c.status.Reason = reason
	c.status.FinishedAt = r.Clock.Now().UnixNano()
}

// Exit makes a running container exit with code, as if its process ended.
func (r *Runtime) Exit(id string, code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	if c, ok := r.containers[id]; ok {
		r.exit(c, code, reason)
	}
}

func (r *Runtime) StopContainer(_ context.Context, id string, _ int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("StopContainer")
	if c, ok := r.containers[id]; ok && c.c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exit(c, 137, "Error")
	}
	return nil
}

func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("RemoveContainer")
	delete(r.containers, id)
	return nil
}

func (r *Runtime) ListContainers(_ context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("ListContainers")
	var out []*runtimeapi.Container
	for _, c := range r.containers {
		if f != nil && (!matchLabels(c.c.Labels, f.LabelSelector) || (f.PodSandboxId != "" && f.PodSandboxId != c.c.PodSandboxId)) {
			continue
		}
		out = append(out, proto.Clone(c.c).(*runtimeapi.Container))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (r *Runtime) ContainerStatus(_ context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s not found", id)
	}
	return proto.Clone(c.status).(*runtimeapi.ContainerStatus), nil
}

// Config is the config a container was created with.
func (r *Runtime) Config(id string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok {
		return c.config
	}
	return nil
}

func (r *Runtime) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("ExecSync")
	if len(cmd) == 0 {
		return nil, nil, 0, nil
	}
	return nil, nil, r.ExecResult[cmd[0]], nil
}

func (r *Runtime) ImageStatus(_ context.Context, image string) (*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("ImageStatus")
	if !r.images[image] {
		return nil, nil
	}
	return &runtimeapi.Image{Id: "sha256:" + image, RepoTags: []string{image}}, nil
}

func (r *Runtime) PullImage(_ context.Context, image string, _ *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call("PullImage")
	if !r.pullable[image] {
		return "", fmt.Errorf("failed to resolve reference %q: not found", image)
	}
	r.images[image] = true
	return "sha256:" + image, nil
}

func (r *Runtime) ListImages(context.Context) ([]*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	for i := range r.images {
		out = append(out, &runtimeapi.Image{Id: "sha256:" + i, RepoTags: []string{i}})
	}
	return out, nil
}
