package kubelet

import (
	"context"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// Runtime is the part of CRI the kubelet uses; cri.Remote is the real one,
// cri/fake the one in unit tests.
type Runtime interface {
	Version(ctx context.Context) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error)
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig) (string, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	CreateContainer(ctx context.Context, podID string, config *runtimeapi.ContainerConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, timeout int64) error
	RemoveContainer(ctx context.Context, id string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error)
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error)
	ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error)
	PullImage(ctx context.Context, image string, sandbox *runtimeapi.PodSandboxConfig) (string, error)
}

// Network prepares the node's pod network.
type Network interface {
	// EnsureConfig makes the runtime's CNI configuration use podCIDR.
	EnsureConfig(ctx context.Context, podCIDR string) error
	// SyncRoutes routes every other node's podCIDR via its address.
	SyncRoutes(ctx context.Context, nodes []*v1.Node) error
}

// Volumes makes pod volumes exist on the host; volume.Manager is the real one.
type Volumes interface {
	SetUp(ctx context.Context, pod *v1.Pod) (volume.Mounted, error)
	TearDown(uid types.UID) error
	PodUIDsOnDisk() []types.UID
	// PodDir is the pod's directory; TearDown removes it.
	PodDir(uid types.UID) string
}

// CRI labels, as upstream's, so that tools like crictl show pods the same way.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	labelManagedBy     = "io.kube-lite.managed"

	annotationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	annotationRestarts    = "io.kubernetes.container.restartCount"
)

// runtimePod is what the runtime holds for one pod, newest first.
type runtimePod struct {
	Sandboxes     []*runtimeapi.PodSandbox
	SandboxStatus *runtimeapi.PodSandboxStatus // of Sandboxes[0]
	Containers    []*runtimeapi.ContainerStatus
	// sandboxOf maps a container's ID to its sandbox's (a container's
	// status does not say).
	sandboxOf map[string]string
}

func (kl *Kubelet) runtimePod(ctx context.Context, uid types.UID) (*runtimePod, error) {
	sel := map[string]string{labelPodUID: string(uid)}
	sandboxes, err := kl.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	containers, err := kl.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	rp := &runtimePod{Sandboxes: sandboxes, sandboxOf: map[string]string{}}
	sort.Slice(rp.Sandboxes, func(i, j int) bool { return rp.Sandboxes[i].CreatedAt > rp.Sandboxes[j].CreatedAt })
	if len(rp.Sandboxes) > 0 {
		st, err := kl.runtime.PodSandboxStatus(ctx, rp.Sandboxes[0].Id)
		if err != nil {
			return nil, err
		}
		rp.SandboxStatus = st
	}
	for _, c := range containers {
		st, err := kl.runtime.ContainerStatus(ctx, c.Id)
		if err != nil {
			// Removed between list and status: it no longer counts.
			continue
		}
		if st.Labels == nil {
			st.Labels = c.Labels
		}
		rp.sandboxOf[c.Id] = c.PodSandboxId
		rp.Containers = append(rp.Containers, st)
	}
	sort.Slice(rp.Containers, func(i, j int) bool {
		a, b := rp.Containers[i], rp.Containers[j]
		if a.Metadata.GetAttempt() != b.Metadata.GetAttempt() {
			return a.Metadata.GetAttempt() > b.Metadata.GetAttempt()
		}
		return a.CreatedAt > b.CreatedAt
	})
	return rp, nil
}

// readySandbox is the pod's newest sandbox if it is ready.
func (rp *runtimePod) readySandbox() *runtimeapi.PodSandbox {
	if len(rp.Sandboxes) == 0 || rp.Sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil
	}
	return rp.Sandboxes[0]
}

// latest returns a container's newest and previous instances.
func (rp *runtimePod) latest(name string) (cur, prev *runtimeapi.ContainerStatus) {
	for _, c := range rp.Containers {
		if c.Metadata.GetName() != name {
			continue
		}
		if cur == nil {
			cur = c
		} else {
			return cur, c
		}
	}
	return cur, nil
}

func (rp *runtimePod) running() []*runtimeapi.ContainerStatus {
	var out []*runtimeapi.ContainerStatus
	for _, c := range rp.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out = append(out, c)
		}
	}
	return out
}

func (rp *runtimePod) empty() bool { return len(rp.Sandboxes) == 0 && len(rp.Containers) == 0 }

func (rp *runtimePod) podIP() string {
	if rp.SandboxStatus == nil || rp.SandboxStatus.State != runtimeapi.PodSandboxState_SANDBOX_READY || rp.SandboxStatus.Network == nil {
		return ""
	}
	return rp.SandboxStatus.Network.Ip
}
