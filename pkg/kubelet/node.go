package kubelet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/version"
)

const nodeLeaseNamespace = "kube-node-lease"

// capacity reads the host's resources.
func (kl *Kubelet) capacity() v1.ResourceList {
	list := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memTotal(), resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(kl.cfg.MaxPods), resource.DecimalSI),
	}
	var fs unix.Statfs_t
	dir := kl.cfg.RootDir
	if dir == "" {
		dir = "/"
	}
	if err := unix.Statfs(dir, &fs); err == nil {
		list[v1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*int64(fs.Bsize), resource.BinarySI)
	}
	return list
}

// allocatable is capacity: kube-lite reserves nothing for the system.
func (kl *Kubelet) allocatable() v1.ResourceList { return kl.capacity() }

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func osImage() string {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func (kl *Kubelet) nodeInfo(ctx context.Context) v1.NodeSystemInfo {
	info := v1.NodeSystemInfo{
		MachineID:       readTrim("/etc/machine-id"),
		SystemUUID:      readTrim("/sys/class/dmi/id/product_uuid"),
		BootID:          readTrim("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   kernelVersion(),
		OSImage:         osImage(),
		KubeletVersion:  version.GitVersion,
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
	}
	if v, err := kl.runtime.Version(ctx); err == nil {
		info.ContainerRuntimeVersion = v.RuntimeName + "://" + v.RuntimeVersion
	}
	return info
}

func (kl *Kubelet) initialNode(ctx context.Context) *v1.Node {
	labels := map[string]string{
		v1.LabelHostname:          kl.cfg.Hostname,
		v1.LabelOSStable:          runtime.GOOS,
		v1.LabelArchStable:        runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range kl.cfg.Labels {
		labels[k] = v
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: kl.cfg.NodeName, Labels: labels},
		Spec:       v1.NodeSpec{Taints: kl.cfg.Taints},
	}
	if kl.cfg.PodCIDR != "" {
		node.Spec.PodCIDR = kl.cfg.PodCIDR
		node.Spec.PodCIDRs = []string{kl.cfg.PodCIDR}
	}
	node.Status = kl.nodeStatus(ctx, nil)
	return node
}

// registerNode creates the Node, or brings an existing one (this node
// before a restart) up to date with its labels, taints and podCIDR.
func (kl *Kubelet) registerNode(ctx context.Context) error {
	node := kl.initialNode(ctx)
	for {
		created, err := kl.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err == nil {
			slog.Info("registered node", "node", created.Name)
			kl.adoptPodCIDR(ctx, created)
			return kl.patchNodeStatus(ctx, node.Status)
		}
		if apierrors.IsAlreadyExists(err) {
			existing, err := kl.client.CoreV1().Nodes().Get(ctx, kl.cfg.NodeName, metav1.GetOptions{})
			if err == nil {
				kl.readyBefore = readyStatus(existing.Status)
				if err := kl.reconcileNode(ctx, existing, node); err == nil {
					return kl.patchNodeStatus(ctx, node.Status)
				}
			}
		}
		slog.Warn("register node, will retry", "node", kl.cfg.NodeName, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-kl.clock.After(time.Second):
		}
	}
}

func (kl *Kubelet) reconcileNode(ctx context.Context, existing, want *v1.Node) error {
	patch := map[string]any{}
	meta := map[string]any{}
	labels := map[string]string{}
	for k, v := range want.Labels {
		if existing.Labels[k] != v {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(meta) > 0 {
		patch["metadata"] = meta
	}
	spec := map[string]any{}
	if existing.Spec.PodCIDR == "" && want.Spec.PodCIDR != "" {
		spec["podCIDR"] = want.Spec.PodCIDR
		spec["podCIDRs"] = want.Spec.PodCIDRs
	}
	if len(existing.Spec.Taints) == 0 && len(want.Spec.Taints) > 0 {
		spec["taints"] = want.Spec.Taints
	}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	if len(patch) > 0 {
		body, _ := json.Marshal(patch)
		updated, err := kl.client.CoreV1().Nodes().Patch(ctx, existing.Name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("update node: %w", err)
		}
		existing = updated
	}
	kl.adoptPodCIDR(ctx, existing)
	return nil
}

// adoptPodCIDR takes the Node's podCIDR when none was given on the command
// line (the controller-manager allocates them).
func (kl *Kubelet) adoptPodCIDR(ctx context.Context, node *v1.Node) {
	kl.mu.Lock()
	have := kl.podCIDR
	kl.mu.Unlock()
	if have != "" || node.Spec.PodCIDR == "" {
		return
	}
	kl.ensureNetwork(ctx, node.Spec.PodCIDR)
}

// nodeStatus computes the Node's status; prev carries transition times.
func (kl *Kubelet) nodeStatus(ctx context.Context, prev *v1.NodeStatus) v1.NodeStatus {
	now := metav1.NewTime(kl.clock.Now()).Rfc3339Copy()
	capacity := kl.capacity()
	s := v1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     kl.allocatable(),
		NodeInfo:        kl.nodeInfo(ctx),
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: int32(kl.cfg.Port)}},
		Phase:           "",
		// The node features this kubelet serves, as upstream's declares
		// them (NodeDeclaredFeatures, beta and on in 1.36): only the
		// in-place restart, the others upstream may declare kube-lite does
		// not serve.
		DeclaredFeatures: []string{restartallcontainers.RestartAllContainersOnContainerExits},
	}
	if kl.cfg.NodeIP != "" {
		s.Addresses = append(s.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: kl.cfg.NodeIP})
	}
	s.Addresses = append(s.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: kl.cfg.Hostname})

	ready, reason, msg := true, "KubeletReady", "kubelet is posting ready status"
	if problems := kl.readinessProblems(ctx); len(problems) > 0 {
		ready, reason, msg = false, "KubeletNotReady", strings.Join(problems, ", ")
	}
	cond := func(t v1.NodeConditionType, status v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		c := v1.NodeCondition{Type: t, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		if prev != nil {
			for _, p := range prev.Conditions {
				if p.Type == t && p.Status == status {
					c.LastTransitionTime = p.LastTransitionTime
				}
			}
		}
		return c
	}
	readyStatus := v1.ConditionTrue
	if !ready {
		readyStatus = v1.ConditionFalse
	}
	s.Conditions = []v1.NodeCondition{
		cond(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(v1.NodeReady, readyStatus, reason, msg),
	}
	if imgs, err := kl.listImages(ctx); err == nil {
		s.Images = imgs
	}
	return s
}

func (kl *Kubelet) listImages(ctx context.Context) ([]v1.ContainerImage, error) {
	lister, ok := kl.runtime.(interface {
		ListImages(ctx context.Context) ([]*runtimeapi.Image, error)
	})
	if !ok {
		return nil, fmt.Errorf("runtime cannot list images")
	}
	imgs, err := lister.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	var out []v1.ContainerImage
	for _, i := range imgs {
		names := append(append([]string{}, i.RepoTags...), i.RepoDigests...)
		if len(names) == 0 {
			continue
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(i.GetSize())})
	}
	return out, nil
}

// runtimeDownGrace is how long the runtime may fail its status check before
// the node says it is down, as upstream's kubelet: a restart of containerd
// does not flap the node NotReady (and get it tainted).
const runtimeDownGrace = 30 * time.Second

// readinessProblems says why the node cannot run pods, if it cannot.
func (kl *Kubelet) readinessProblems(ctx context.Context) []string {
	var problems []string
	rs, err := kl.runtime.Status(ctx)
	kl.mu.Lock()
	if err == nil {
		kl.runtimeOKAt = kl.clock.Now()
	}
	okAt := kl.runtimeOKAt
	kl.mu.Unlock()
	if err != nil {
		// The node's message is upstream's; the cause goes to the log.
		slog.Warn("container runtime status check failed", "err", err)
		switch {
		case okAt.IsZero():
			return []string{"container runtime status check may not have completed yet"}
		case kl.clock.Since(okAt) >= runtimeDownGrace:
			return []string{"container runtime is down"}
		}
	}
	for _, c := range rs.GetConditions() {
		if !c.Status && (c.Type == runtimeapi.RuntimeReady || c.Type == runtimeapi.NetworkReady) {
			problems = append(problems, fmt.Sprintf("container runtime %s=false reason:%s message:%s", c.Type, c.Reason, c.Message))
		}
	}
	if ok, msg := kl.networkReady(); !ok {
		problems = append(problems, msg)
	}
	if ok, last := kl.pleg.Healthy(3 * time.Minute); !ok && !last.IsZero() {
		problems = append(problems, fmt.Sprintf("PLEG is not healthy: pleg was last seen active %s ago", kl.clock.Since(last).Round(time.Second)))
	}
	return problems
}

func (kl *Kubelet) patchNodeStatus(ctx context.Context, s v1.NodeStatus) error {
	body, err := json.Marshal(map[string]any{"status": s})
	if err != nil {
		return err
	}
	_, err = kl.client.CoreV1().Nodes().Patch(ctx, kl.cfg.NodeName, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch node status: %w", err)
	}
	return nil
}

// nodeStatusLoop writes the Node's status when it changed, and at least
// every NodeStatusReportFrequency (the Lease is the frequent heartbeat).
func (kl *Kubelet) nodeStatusLoop(ctx context.Context) {
	t := kl.clock.NewTicker(kl.cfg.NodeStatusUpdateFrequency)
	defer t.Stop()
	var last *v1.NodeStatus
	var lastSent time.Time
	// What the API said of Ready before this kubelet registered: a
	// restarted kubelet reports no change the node did not make.
	reported := kl.readyBefore
	for {
		s := kl.nodeStatus(ctx, last)
		if last == nil || !sameNodeStatus(*last, s) || kl.clock.Since(lastSent) >= kl.cfg.NodeStatusReportFrequency {
			if err := kl.patchNodeStatus(ctx, s); err != nil {
				slog.Warn("update node status", "err", err)
			} else {
				last, lastSent = &s, kl.clock.Now()
				if now := readyStatus(s); now != reported {
					kl.recordNodeReadiness(now)
					reported = now
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-kl.nodeStatusKick:
		}
	}
}

func readyStatus(s v1.NodeStatus) v1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// recordNodeReadiness tells, as upstream's kubelet does, that the node
// became Ready or stopped being Ready; describe node shows it.
func (kl *Kubelet) recordNodeReadiness(ready v1.ConditionStatus) {
	what := "NodeNotReady"
	if ready == v1.ConditionTrue {
		what = "NodeReady"
	}
	// Upstream's kubelet names its Node by name in the UID field too.
	ref := &v1.ObjectReference{Kind: "Node", Name: kl.cfg.NodeName, UID: types.UID(kl.cfg.NodeName)}
	kl.recorder.Eventf(ref, v1.EventTypeNormal, what, "Node %s status is now: %s", kl.cfg.NodeName, what)
}

// kickNodeStatus makes the node status loop report at once.
func (kl *Kubelet) kickNodeStatus() {
	select {
	case kl.nodeStatusKick <- struct{}{}:
	default:
	}
}

// sameNodeStatus compares ignoring heartbeat times.
func sameNodeStatus(a, b v1.NodeStatus) bool {
	strip := func(s v1.NodeStatus) v1.NodeStatus {
		c := *s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return c
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// leaseLoop renews the node's Lease in kube-node-lease, the heartbeat the
// node lifecycle controller watches.
func (kl *Kubelet) leaseLoop(ctx context.Context) {
	interval := time.Duration(float64(kl.cfg.NodeLeaseDuration) * 0.25)
	t := kl.clock.NewTicker(interval)
	defer t.Stop()
	for {
		if err := kl.renewLease(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("renew node lease", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (kl *Kubelet) renewLease(ctx context.Context) error {
	leases := kl.client.CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NewMicroTime(kl.clock.Now())
	secs := int32(kl.cfg.NodeLeaseDuration / time.Second)
	holder := kl.cfg.NodeName
	lease, err := leases.Get(ctx, kl.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: kl.cfg.NodeName, Namespace: nodeLeaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
		}
		if node, err := kl.client.CoreV1().Nodes().Get(ctx, kl.cfg.NodeName, metav1.GetOptions{}); err == nil {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease: %w", err)
	}
	lease.Spec.HolderIdentity = &holder
	lease.Spec.LeaseDurationSeconds = &secs
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update lease: %w", err)
	}
	return nil
}
