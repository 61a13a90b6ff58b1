// Package cri talks to a container runtime (containerd) over the CRI v1
// gRPC API on a unix socket.
package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxMsgSize matches upstream's: ListContainers on a busy node exceeds grpc's 4 MiB default.
const maxMsgSize = 16 * 1024 * 1024

// Reconnect back-off, as upstream's CRI client: gRPC's default grows to two
// minutes, so a containerd restarted after an outage of a minute or more went
// unnoticed (the node NotReady, pods not synced) for up to that long.
const (
	reconnectBaseDelay = 100 * time.Millisecond
	reconnectMaxDelay  = 3 * time.Second
	minConnectTimeout  = 5 * time.Second
)

// Remote is a CRI runtime and image service reached over gRPC.
type Remote struct {
	conn    *grpc.ClientConn
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
}

// Dial connects to endpoint ("unix:///run/containerd/containerd.sock" or a bare path).
// The connection is lazy: the first call reports an unreachable runtime.
func Dial(endpoint string) (*Remote, error) {
	target := endpoint
	if strings.HasPrefix(target, "/") {
		target = "unix://" + target
	}
	bo := backoff.DefaultConfig
	bo.BaseDelay, bo.MaxDelay = reconnectBaseDelay, reconnectMaxDelay
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: minConnectTimeout}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("dial CRI %s: %w", endpoint, err)
	}
	return &Remote{conn: conn, runtime: runtimeapi.NewRuntimeServiceClient(conn), images: runtimeapi.NewImageServiceClient(conn)}, nil
}

// Close closes the connection.
func (r *Remote) Close() error { return r.conn.Close() }

func (r *Remote) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	resp, err := r.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return nil, fmt.Errorf("CRI Version: %w", err)
	}
	return resp, nil
}

func (r *Remote) Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error) {
	resp, err := r.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI Status: %w", err)
	}
	return resp.GetStatus(), nil
}

func (r *Remote) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := r.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
	if err != nil {
		return "", fmt.Errorf("CRI RunPodSandbox: %w", err)
	}
	return resp.GetPodSandboxId(), nil
}

func (r *Remote) StopPodSandbox(ctx context.Context, id string) error {
	if _, err := r.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("CRI StopPodSandbox %s: %w", id, err)
	}
	return nil
}

func (r *Remote) RemovePodSandbox(ctx context.Context, id string) error {
	if _, err := r.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("CRI RemovePodSandbox %s: %w", id, err)
	}
	return nil
}

func (r *Remote) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	resp, err := r.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, fmt.Errorf("CRI PodSandboxStatus %s: %w", id, err)
	}
	return resp.GetStatus(), nil
}

func (r *Remote) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := r.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	return resp.GetItems(), nil
}

func (r *Remote) CreateContainer(ctx context.Context, podID string, config *runtimeapi.ContainerConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := r.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: config, SandboxConfig: sandbox})
	if err != nil {
		return "", fmt.Errorf("CRI CreateContainer: %w", err)
	}
	return resp.GetContainerId(), nil
}

func (r *Remote) StartContainer(ctx context.Context, id string) error {
	if _, err := r.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("CRI StartContainer %s: %w", id, err)
	}
	return nil
}

func (r *Remote) StopContainer(ctx context.Context, id string, timeout int64) error {
	if _, err := r.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
		return fmt.Errorf("CRI StopContainer %s: %w", id, err)
	}
	return nil
}

func (r *Remote) RemoveContainer(ctx context.Context, id string) error {
	if _, err := r.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("CRI RemoveContainer %s: %w", id, err)
	}
	return nil
}

func (r *Remote) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := r.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	return resp.GetContainers(), nil
}

func (r *Remote) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	resp, err := r.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("CRI ContainerStatus %s: %w", id, err)
	}
	return resp.GetStatus(), nil
}

func (r *Remote) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	secs := int64(timeout / time.Second)
	if secs < 1 {
		secs = 1
	}
	resp, err := r.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		return nil, nil, -1, fmt.Errorf("CRI ExecSync %s: %w", id, err)
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}

func (r *Remote) ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error) {
	resp, err := r.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return nil, fmt.Errorf("CRI ImageStatus %s: %w", image, err)
	}
	return resp.GetImage(), nil
}

func (r *Remote) PullImage(ctx context.Context, image string, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := r.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}, SandboxConfig: sandbox})
	if err != nil {
		return "", fmt.Errorf("CRI PullImage %s: %w", image, err)
	}
	return resp.GetImageRef(), nil
}

func (r *Remote) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	resp, err := r.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI ListImages: %w", err)
	}
	return resp.GetImages(), nil
}
