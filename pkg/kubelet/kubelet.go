// Package kubelet is kube-lite's node agent: it registers its Node, watches
// the pods bound to it and makes them real through CRI (containerd), CNI and
// host volumes, then reports their status back through the API.
package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/kubelet/backoff"
	"github.com/kube-lite/kube-lite/pkg/kubelet/pleg"
	"github.com/kube-lite/kube-lite/pkg/kubelet/podworkers"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
	"github.com/kube-lite/kube-lite/pkg/kubelet/status"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// Config is what the kubelet needs to know about its node.
type Config struct {
	NodeName   string
	NodeIP     string
	Hostname   string
	PodCIDR    string
	RootDir    string
	Labels     map[string]string
	Taints     []v1.Taint
	MaxPods    int
	Port       int
	CgroupRoot string
	// ClusterDomain is the DNS domain of the cluster's services, which a
	// pod with a subdomain takes its FQDN under.
	ClusterDomain string
	// ClusterDNS are the cluster DNS servers ClusterFirst pods ask; none
	// makes them fall back to the node's resolver (upstream's --cluster-dns).
	ClusterDNS []string
	// ResolvConf is the node's resolver configuration, the base of a pod's
	// (upstream's --resolv-conf).
	ResolvConf string
	// PodInfraImage is the sandbox image containerd is configured with; the
	// kubelet only keeps it present.
	PodInfraImage string

	CrashLoopBackoffInitial time.Duration
	CrashLoopBackoffMax     time.Duration
	ImagePullBackoffInitial time.Duration
	ImagePullBackoffMax     time.Duration

	RelistPeriod              time.Duration
	SyncPeriod                time.Duration
	HousekeepingPeriod        time.Duration
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	NodeLeaseDuration         time.Duration
}

// Defaults fills in upstream's defaults.
func (c *Config) Defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.CrashLoopBackoffInitial, 10*time.Second)
	def(&c.CrashLoopBackoffMax, 5*time.Minute)
	def(&c.ImagePullBackoffInitial, 10*time.Second)
	def(&c.ImagePullBackoffMax, 5*time.Minute)
	def(&c.RelistPeriod, time.Second)
	def(&c.SyncPeriod, 10*time.Second)
	def(&c.HousekeepingPeriod, 2*time.Second)
	def(&c.NodeStatusUpdateFrequency, 10*time.Second)
	def(&c.NodeStatusReportFrequency, time.Minute)
	def(&c.NodeLeaseDuration, 40*time.Second)
	if c.MaxPods <= 0 {
		c.MaxPods = 110
	}
	if c.Port == 0 {
		c.Port = 10250
	}
	if c.Hostname == "" {
		c.Hostname = c.NodeName
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.ClusterDomain == "" {
		// What kubeadm and kind configure; upstream's flag has no default.
		c.ClusterDomain = "cluster.local"
	}
}

// Kubelet runs the pods of one node.
type Kubelet struct {
	cfg      Config
	client   kubernetes.Interface
	runtime  Runtime
	network  Network
	volumes  Volumes
	clock    clock.WithTicker
	recorder record.EventRecorder
	metrics  *Metrics

	workers      *podworkers.Workers
	statuses     *status.Manager
	probes       *prober.Manager
	pleg         *pleg.PLEG
	crashBackoff *backoff.Backoff
	pullBackoff  *backoff.Backoff

	factory     informers.SharedInformerFactory
	podInformer cache.SharedIndexInformer
	nodeLister  cache.Indexer
	synced      []cache.InformerSynced
	factories   []informers.SharedInformerFactory

	// services and servicesSynced give containers their Service variables.
	services       serviceLister
	servicesSynced cache.InformerSynced

	// nodeStatusKick asks the node status loop to report now (the network
	// became ready), instead of at its next tick.
	nodeStatusKick chan struct{}
	// readyBefore is the Node's Ready status as registerNode found it,
	// before this kubelet wrote any: "" for a Node it created.
	readyBefore v1.ConditionStatus

	mu       sync.Mutex
	pods     map[types.UID]*podState
	podCIDR  string
	netReady bool
	netErr   string
	runCtx   context.Context
	// runtimeOKAt is when the runtime last answered its status check.
	runtimeOKAt time.Time
}

// podState is the kubelet's memory of one pod. pod is updated by the
// watch; the rest is owned by the pod's worker.
type podState struct {
	pod       *v1.Pod
	firstSeen time.Time
	admitted  bool
	// finished: the pod reached Succeeded or Failed; nothing restarts.
	finished bool
	// waiting holds the reason each not-running container waits, from the last sync.
	waiting       map[string]*v1.ContainerStateWaiting
	startReported bool
	rejected      *v1.PodStatus
	// failure is why the kubelet itself failed the pod (it outlived its
	// active deadline, it was evicted); its containers are stopped.
	failure *podFailure
	// storageChecked is when emptyDir usage was last measured.
	storageChecked time.Time
	// termMessages caches each exited container instance's termination
	// message by container ID: it cannot change once the container exited.
	termMessages map[string]string
	// pullErrs: the last failed pull of each image, by image.
	pullErrs map[string]string
	// stoppedSandboxes: dead sandboxes this kubelet stopped, by ID (see
	// stopDeadSandbox).
	stoppedSandboxes map[string]bool
	// removed is the pod as last seen once it is gone from the API (a forced
	// delete): its containers are still stopped as its spec says.
	removed *v1.Pod
}

// Deps are the kubelet's collaborators.
type Deps struct {
	Client  kubernetes.Interface
	Runtime Runtime
	Network Network
	Volumes Volumes
	Clock   clock.WithTicker
	Metrics *Metrics
	// Prober runs probes; nil means real exec/HTTP/TCP probes.
	Prober prober.Runner
}

// New returns a kubelet; Run starts it.
func New(cfg Config, d Deps) (*Kubelet, error) {
	cfg.Defaults()
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("node name is required")
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics()
	}
	kl := &Kubelet{
		cfg: cfg, client: d.Client, runtime: d.Runtime, network: d.Network, volumes: d.Volumes, clock: d.Clock, metrics: d.Metrics,
		pods:           map[types.UID]*podState{},
		podCIDR:        cfg.PodCIDR,
		nodeStatusKick: make(chan struct{}, 1),
		crashBackoff:   backoff.New(d.Clock, cfg.CrashLoopBackoffInitial, cfg.CrashLoopBackoffMax, 10*time.Minute),
		pullBackoff:    backoff.New(d.Clock, cfg.ImagePullBackoffInitial, cfg.ImagePullBackoffMax, 0),
	}
	if vm, ok := d.Volumes.(*volume.Manager); ok && vm.Allocatable == nil {
		// Downward API volumes show a missing limit as the node's allocatable.
		vm.Allocatable = kl.allocatable
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: d.Client.CoreV1().Events("")})
	kl.recorder = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.NodeName})
	kl.statuses = status.NewManager(d.Client)
	kl.workers = podworkers.New(d.Clock, kl.syncPod)
	runner := d.Prober
	if runner == nil {
		runner = prober.NewNetRunner(d.Runtime)
	}
	kl.probes = prober.NewManager(d.Clock, runner, kl.recorder, func(uid types.UID) { kl.wake(uid) })
	kl.pleg = pleg.New(d.Runtime, d.Clock, cfg.RelistPeriod, func(uid string) { kl.wake(types.UID(uid)) })

	kl.factory = informers.NewSharedInformerFactoryWithOptions(d.Client, 0)
	podFactory := informers.NewSharedInformerFactoryWithOptions(d.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	}))
	kl.podInformer = podFactory.Core().V1().Pods().Informer()
	_, _ = kl.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { kl.podChanged(obj) },
		UpdateFunc: func(_, obj any) { kl.podChanged(obj) },
		DeleteFunc: kl.podDeleted,
	})
	nodeInformer := kl.factory.Core().V1().Nodes().Informer()
	_, _ = nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { kl.nodesChanged() },
		UpdateFunc: func(_, _ any) { kl.nodesChanged() },
		DeleteFunc: func(any) { kl.nodesChanged() },
	})
	kl.nodeLister = nodeInformer.GetIndexer()
	// Not waited for at start: a container waits for it instead, and only
	// when it is about to be created (upstream's serviceHasSynced).
	services := kl.factory.Core().V1().Services()
	kl.services, kl.servicesSynced = services.Lister(), services.Informer().HasSynced
	kl.synced = []cache.InformerSynced{kl.podInformer.HasSynced, nodeInformer.HasSynced}
	kl.factories = []informers.SharedInformerFactory{kl.factory, podFactory}
	return kl, nil
}

// Run starts every loop and blocks until ctx ends.
func (kl *Kubelet) Run(ctx context.Context) error {
	kl.mu.Lock()
	kl.runCtx = ctx
	kl.mu.Unlock()
	if err := kl.registerNode(ctx); err != nil {
		return err
	}
	if kl.podCIDR != "" {
		kl.ensureNetwork(ctx, kl.podCIDR)
	}
	var wg sync.WaitGroup
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	goRun(kl.statuses.Run)
	goRun(kl.pleg.Run)
	goRun(kl.nodeStatusLoop)
	goRun(kl.leaseLoop)
	for _, f := range kl.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), kl.synced...) {
		return ctx.Err()
	}
	slog.Info("kubelet synced its pods", "node", kl.cfg.NodeName, "pods", len(kl.podInformer.GetStore().List()))
	goRun(kl.housekeepingLoop)
	<-ctx.Done()
	kl.workers.Wait()
	wg.Wait()
	return nil
}

func (kl *Kubelet) podChanged(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	kl.mu.Lock()
	st, ok := kl.pods[pod.UID]
	if !ok {
		st = &podState{firstSeen: kl.clock.Now(), waiting: map[string]*v1.ContainerStateWaiting{}}
		kl.pods[pod.UID] = st
	}
	prev := st.pod
	st.pod = pod
	ctx := kl.runCtx
	kl.mu.Unlock()
	// Deletion must not wait behind a sync still starting the pod (an image
	// pull from a slow registry can take minutes): that sync is cancelled.
	if ctx != nil && prev != nil && prev.DeletionTimestamp == nil && pod.DeletionTimestamp != nil {
		kl.workers.Interrupt(ctx, string(pod.UID))
		return
	}
	// The kubelet's own status patches come back through the watch; they
	// need no sync, and skipping them halves the runtime calls per pod start.
	// A condition someone else set (a readiness gate) may change Ready: that
	// one needs a sync.
	if prev != nil && onlyStatusChanged(prev, pod) && !otherConditionsChanged(prev, pod) {
		return
	}
	if ctx != nil {
		kl.workers.Update(ctx, string(pod.UID))
	}
}

func onlyStatusChanged(old, cur *v1.Pod) bool {
	return (old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) &&
		apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) &&
		apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) &&
		apiequality.Semantic.DeepEqual(old.Annotations, cur.Annotations)
}

// otherConditionsChanged reports whether a condition the kubelet does not
// compute changed between old and cur.
func otherConditionsChanged(old, cur *v1.Pod) bool {
	others := func(p *v1.Pod) []v1.PodCondition {
		var out []v1.PodCondition
		for _, c := range p.Status.Conditions {
			if !kubeletCondition(c.Type) {
				out = append(out, c)
			}
		}
		return out
	}
	return !apiequality.Semantic.DeepEqual(others(old), others(cur))
}

func (kl *Kubelet) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	kl.mu.Lock()
	// Removed at once (a forced delete) rather than after graceful termination.
	abrupt := false
	if st, ok := kl.pods[pod.UID]; ok {
		abrupt = st.pod != nil && st.pod.DeletionTimestamp == nil
		if st.pod != nil {
			st.removed = st.pod
		}
		st.pod = nil
	}
	ctx := kl.runCtx
	kl.mu.Unlock()
	if abrupt && ctx != nil {
		kl.workers.Interrupt(ctx, string(pod.UID))
		return
	}
	kl.wake(pod.UID)
}

// lifetime is the context of the kubelet's run, for work that outlives the
// sync starting it.
func (kl *Kubelet) lifetime() context.Context {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	if kl.runCtx == nil {
		return context.Background()
	}
	return kl.runCtx
}

// wake resyncs a pod now, e.g. when its containers changed state.
func (kl *Kubelet) wake(uid types.UID) {
	kl.mu.Lock()
	ctx := kl.runCtx
	kl.mu.Unlock()
	if ctx != nil && uid != "" {
		kl.workers.Update(ctx, string(uid))
	}
}

func (kl *Kubelet) state(uid types.UID) (*podState, *v1.Pod) {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	st, ok := kl.pods[uid]
	if !ok {
		return nil, nil
	}
	return st, st.pod
}

func (kl *Kubelet) forget(uid types.UID) {
	kl.mu.Lock()
	delete(kl.pods, uid)
	kl.mu.Unlock()
	kl.statuses.Forget(uid)
	kl.probes.RemovePod(uid)
	kl.crashBackoff.ForgetPrefix(string(uid) + "/")
	kl.pullBackoff.ForgetPrefix(string(uid) + "/")
}

// activePods are the pods this kubelet has admitted and not finished.
func (kl *Kubelet) activePods() []*v1.Pod {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	var out []*v1.Pod
	for _, st := range kl.pods {
		if st.pod != nil && st.admitted && !st.finished {
			out = append(out, st.pod)
		}
	}
	return out
}

// Pods lists the pods bound to this node, as the API last showed them.
func (kl *Kubelet) Pods() []*v1.Pod {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	out := make([]*v1.Pod, 0, len(kl.pods))
	for uid, st := range kl.pods {
		if st.pod == nil {
			continue
		}
		p := st.pod.DeepCopy()
		if s, ok := kl.statuses.Status(uid); ok {
			p.Status = s
		}
		out = append(out, p)
	}
	return out
}

// housekeepingLoop cleans up what no pod owns any more: sandboxes of pods
// deleted while the kubelet was down, and their volume directories.
func (kl *Kubelet) housekeepingLoop(ctx context.Context) {
	t := kl.clock.NewTicker(kl.cfg.HousekeepingPeriod)
	defer t.Stop()
	for {
		kl.housekeeping(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (kl *Kubelet) housekeeping(ctx context.Context) {
	known := map[types.UID]bool{}
	kl.mu.Lock()
	for uid, st := range kl.pods {
		if st.pod != nil {
			known[uid] = true
		}
	}
	kl.mu.Unlock()
	orphans := map[types.UID]bool{}
	snap := kl.pleg.Last()
	for _, s := range snap.Sandboxes {
		if uid := types.UID(s.Labels[labelPodUID]); uid != "" && !known[uid] {
			orphans[uid] = true
		}
	}
	for _, c := range snap.Containers {
		if uid := types.UID(c.Labels[labelPodUID]); uid != "" && !known[uid] {
			orphans[uid] = true
		}
	}
	for _, uid := range kl.volumes.PodUIDsOnDisk() {
		if !known[uid] {
			orphans[uid] = true
		}
	}
	for uid := range orphans {
		if !kl.workers.Has(string(uid)) {
			kl.workers.Update(ctx, string(uid))
		}
	}
	running := 0
	for _, s := range snap.Sandboxes {
		if s.State.String() == "SANDBOX_READY" {
			running++
		}
	}
	containers := 0
	for _, c := range snap.Containers {
		if c.State.String() == "CONTAINER_RUNNING" {
			containers++
		}
	}
	kl.metrics.RunningPods.Set(float64(running))
	kl.metrics.RunningContainers.Set(float64(containers))
}
