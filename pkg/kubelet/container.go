package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/api/podqos"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

func (kl *Kubelet) podLogDir(ns, name string, uid types.UID) string {
	return filepath.Join(kl.cfg.RootDir, "pod-logs", fmt.Sprintf("%s_%s_%s", ns, name, uid))
}

// qosClass is the pod's QoS class: as upstream's GetPodQOS, the one the API
// server gave it (which status updates may not change: a different one made
// every status patch fail), else computed by the same function the API
// server's pod strategy uses, so the two cannot drift apart.
func qosClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return podqos.Class(pod)
}

// podCgroupParent places a pod under kubepods[/burstable|/besteffort], like
// upstream's cgroupfs layout.
func (kl *Kubelet) podCgroupParent(pod *v1.Pod) string {
	parts := []string{kl.cfg.CgroupRoot, "kubepods"}
	switch qosClass(pod) {
	case v1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case v1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	parts = append(parts, "pod"+string(pod.UID))
	return filepath.Join(append([]string{"/"}, parts...)...)
}

// removePodCgroups removes a gone pod's (empty) cgroup directories.
func (kl *Kubelet) removePodCgroups(uid types.UID) {
	controllers, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return
	}
	for _, ctrl := range controllers {
		for _, qos := range []string{"", "burstable", "besteffort"} {
			dir := filepath.Join("/sys/fs/cgroup", ctrl.Name(), kl.cfg.CgroupRoot, "kubepods", qos, "pod"+string(uid))
			_ = os.Remove(dir)
		}
	}
}

func (kl *Kubelet) sandboxConfig(pod *v1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	cfg, _, _ := kl.checkedSandboxConfig(pod, attempt)
	return cfg
}

// checkedSandboxConfig is sandboxConfig with what only creating the sandbox
// acts on: dnsWarnings word the cuts made to the pod's resolver
// configuration and a missing cluster DNS, and err is an FQDN too long for the kernel, which fails
// the sandbox.
func (kl *Kubelet) checkedSandboxConfig(pod *v1.Pod, attempt uint32) (cfg *runtimeapi.PodSandboxConfig, dnsWarnings []dnsWarning, err error) {
	labels := map[string]string{}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[labelPodName] = pod.Name
	labels[labelPodNamespace] = pod.Namespace
	labels[labelPodUID] = string(pod.UID)
	labels[labelManagedBy] = "true"
	annotations := map[string]string{}
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	hostname, err := kl.kernelHostname(pod)
	netMode := runtimeapi.NamespaceMode_POD
	if pod.Spec.HostNetwork {
		netMode = runtimeapi.NamespaceMode_NODE
		hostname = ""
	}
	pidMode := runtimeapi.NamespaceMode_CONTAINER
	if pod.Spec.HostPID {
		pidMode = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		pidMode = runtimeapi.NamespaceMode_POD
	}
	ipcMode := runtimeapi.NamespaceMode_POD
	if pod.Spec.HostIPC {
		ipcMode = runtimeapi.NamespaceMode_NODE
	}
	var ports []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case v1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case v1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			ports = append(ports, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	cfg = &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: kl.podLogDir(pod.Namespace, pod.Name, pod.UID),
		PortMappings: ports,
		Labels:       labels,
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: kl.podCgroupParent(pod),
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: netMode, Pid: pidMode, Ipc: ipcMode},
			},
		},
	}
	if dns, warnings, dnsErr := kl.podDNS(pod); dnsErr != nil {
		slog.Warn("pod DNS config", "pod", podKey(pod), "err", dnsErr)
	} else {
		cfg.DnsConfig, dnsWarnings = dns, warnings
	}
	// The runtime refuses a privileged container in an unprivileged sandbox.
	cfg.Linux.SecurityContext.Privileged = hasPrivilegedContainer(pod)
	if sc := pod.Spec.SecurityContext; sc != nil {
		cfg.Linux.SecurityContext.RunAsUser = int64Value(sc.RunAsUser)
		cfg.Linux.SecurityContext.RunAsGroup = int64Value(sc.RunAsGroup)
		cfg.Linux.SecurityContext.SupplementalGroups = sc.SupplementalGroups
	}
	return cfg, dnsWarnings, err
}

func hasPrivilegedContainer(pod *v1.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				return true
			}
		}
	}
	return false
}

func int64Value(p *int64) *runtimeapi.Int64Value {
	if p == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *p}
}

func (kl *Kubelet) containerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, attempt uint32, podIP string, mounts volume.Mounted) (*runtimeapi.ContainerConfig, error) {
	env, err := kl.containerEnv(ctx, pod, c, podIP)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	var kvs []*runtimeapi.KeyValue
	for _, e := range env {
		vars[e.Name] = e.Value
		kvs = append(kvs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	expand := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = expandVars(s, vars)
		}
		return out
	}
	var cmounts []*runtimeapi.Mount
	for i, m := range c.VolumeMounts {
		host, ok := mounts[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume %q is not a volume of the pod", m.Name)
		}
		// subPath is taken as written; only subPathExpr expands $(VAR).
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expandVars(m.SubPathExpr, vars)
		}
		if sub != "" {
			p, err := kl.subPathMount(pod, c.Name, i, m.Name, host, sub)
			if err != nil {
				return nil, err
			}
			host = p
		}
		readOnly := m.ReadOnly
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && (v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil) {
				readOnly = true
			}
		}
		cmounts = append(cmounts, &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: host, Readonly: readOnly, SelinuxRelabel: false})
	}
	hosts, err := kl.etcHostsMount(pod, c, podIP)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		cmounts = append(cmounts, hosts)
	}
	tm, err := kl.terminationMessageMount(pod, c)
	if err != nil {
		return nil, err
	}
	if tm != nil {
		cmounts = append(cmounts, tm)
	}
	labels := map[string]string{
		labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID),
		labelContainerName: c.Name, labelManagedBy: "true",
	}
	annotations := map[string]string{
		annotationRestarts:    strconv.FormatUint(uint64(attempt), 10),
		annotationGracePeriod: strconv.FormatInt(gracePeriod(pod), 10),
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:       &runtimeapi.ImageSpec{Image: c.Image},
		Command:     expand(c.Command),
		Args:        expand(c.Args),
		WorkingDir:  c.WorkingDir,
		Envs:        kvs,
		Mounts:      cmounts,
		Labels:      labels,
		Annotations: annotations,
		LogPath:     filepath.Join(c.Name, fmt.Sprintf("%d.log", attempt)),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, c),
			SecurityContext: containerSecurity(pod, c),
		},
	}
	return cfg, nil
}

func containerResources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000}
	// cpu.shares from the request (min 2, as the kernel wants), quota from the limit.
	shares := int64(2)
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		shares = q.MilliValue() * 1024 / 1000
	} else if q, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		shares = q.MilliValue() * 1024 / 1000
	}
	if shares < 2 {
		shares = 2
	}
	r.CpuShares = shares
	if q, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		quota := q.MilliValue() * 100000 / 1000
		if quota < 1000 {
			quota = 1000
		}
		r.CpuQuota = quota
	}
	if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = q.Value()
	}
	switch qosClass(pod) {
	case v1.PodQOSGuaranteed:
		r.OomScoreAdj = -997
	case v1.PodQOSBestEffort:
		r.OomScoreAdj = 1000
	default:
		r.OomScoreAdj = 500
	}
	return r
}

func containerSecurity(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
	}
	if pod.Spec.HostNetwork {
		sc.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		sc.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.RunAsUser = int64Value(psc.RunAsUser)
		sc.RunAsGroup = int64Value(psc.RunAsGroup)
		sc.SupplementalGroups = psc.SupplementalGroups
	}
	csc := c.SecurityContext
	if csc == nil {
		return sc
	}
	if csc.RunAsUser != nil {
		sc.RunAsUser = int64Value(csc.RunAsUser)
	}
	if csc.RunAsGroup != nil {
		sc.RunAsGroup = int64Value(csc.RunAsGroup)
	}
	if csc.Privileged != nil {
		sc.Privileged = *csc.Privileged
	}
	if csc.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
	}
	if csc.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
	}
	if csc.Capabilities != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, c := range csc.Capabilities.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range csc.Capabilities.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(c))
		}
	}
	return sc
}

// containerEnv resolves env and envFrom: literals, configMap and secret
// keys, downward API fields and resources, with $(VAR) references.
func (kl *Kubelet) containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, podIP string) ([]v1.EnvVar, error) {
	// The Services' variables come after the container's own, which
	// override them, and $(VAR) sees them too (upstream's order).
	services, err := kl.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	var out []v1.EnvVar
	index := map[string]int{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i].Value = value
			return
		}
		index[name] = len(out)
		out = append(out, v1.EnvVar{Name: name, Value: value})
	}
	vars := func() map[string]string {
		m := map[string]string{}
		for _, e := range services {
			m[e.Name] = e.Value
		}
		for _, e := range out {
			m[e.Name] = e.Value
		}
		return m
	}
	withIPs := pod.DeepCopy()
	withIPs.Status.PodIP = podIP
	withIPs.Status.PodIPs = []v1.PodIP{{IP: podIP}}
	withIPs.Status.HostIP = kl.cfg.NodeIP
	withIPs.Status.HostIPs = []v1.HostIP{{IP: kl.cfg.NodeIP}}
	withIPs.Spec.NodeName = kl.cfg.NodeName

	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := kl.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, fmt.Errorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				set(from.Prefix+k, v)
			}
		case from.SecretRef != nil:
			s, err := kl.client.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, fmt.Errorf("secret %q not found", from.SecretRef.Name)
			}
			for k, v := range s.Data {
				set(from.Prefix+k, string(v))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			v := e.Value
			if strings.Contains(v, "$") {
				// Built only when needed: it holds every Service's variables.
				v = expandVars(v, vars())
			}
			set(e.Name, v)
			continue
		}
		vf := e.ValueFrom
		switch {
		case vf.FieldRef != nil:
			v, err := volume.FieldValue(withIPs, vf.FieldRef.FieldPath)
			if err != nil {
				return nil, err
			}
			set(e.Name, v)
		case vf.ResourceFieldRef != nil:
			ref := vf.ResourceFieldRef.DeepCopy()
			if ref.ContainerName == "" {
				ref.ContainerName = c.Name
			}
			v, err := volume.ResourceValue(pod, ref, kl.allocatable)
			if err != nil {
				return nil, err
			}
			set(e.Name, v)
		case vf.ConfigMapKeyRef != nil:
			ref := vf.ConfigMapKeyRef
			optional := ref.Optional != nil && *ref.Optional
			cm, err := kl.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, fmt.Errorf("configmap %q not found", ref.Name)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			set(e.Name, v)
		case vf.SecretKeyRef != nil:
			ref := vf.SecretKeyRef
			optional := ref.Optional != nil && *ref.Optional
			s, err := kl.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, fmt.Errorf("secret %q not found", ref.Name)
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			set(e.Name, string(v))
		}
	}
	for _, e := range services {
		if _, ok := index[e.Name]; !ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// expandVars replaces $(NAME) with NAME's value; $$ escapes a dollar, and
// unknown references stay as written (upstream's rules).
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
