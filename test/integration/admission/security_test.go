package admission_test

import (
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestPodSecurityBaseline(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "secure", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	createNamespace(t, s.Client, "open", nil)

	priv := simplePod("x")
	yes := true
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	_, err := s.Client.CoreV1().Pods("secure").Create(ctx, priv, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`)

	hostPath := simplePod("hp")
	hostPath.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	_, err = s.Client.CoreV1().Pods("secure").Create(ctx, hostPath, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `hostPath volumes (volume "root")`)

	if _, err := s.Client.CoreV1().Pods("secure").Create(ctx, simplePod("plain"), metav1.CreateOptions{}); err != nil {
		t.Errorf("plain pod in a baseline namespace: %v", err)
	}
	if _, err := s.Client.CoreV1().Pods("open").Create(ctx, priv, metav1.CreateOptions{}); err != nil {
		t.Errorf("privileged pod in a namespace without the label: %v", err)
	}
}

// TestNodeRestriction runs with authentication on, as kubelets n1 and n2;
// the Node authorizer already keeps a node from other nodes' objects, so
// these cases are the ones only admission decides.
// warningRecorder keeps the Warning headers a client receives.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

func TestPodSecurityWarnings(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "warned", map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"})
	createNamespace(t, s.Client, "strict", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	rec := &warningRecorder{}
	cfg := rest.CopyConfig(s.Config)
	cfg.WarningHandler = rec
	cs := kubernetes.NewForConfigOrDie(cfg)
	detail := `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

	if _, err := cs.CoreV1().Pods("warned").Create(ctx, simplePod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `would violate PodSecurity "restricted:latest": ` + detail
	if got := rec.take(); len(got) != 1 || got[0] != want {
		t.Errorf("pod create warnings %q, want [%q]", got, want)
	}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: simplePod("").Spec}}}
	if _, err := cs.AppsV1().Deployments("strict").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0] != want {
		t.Errorf("deployment create warnings %q, want [%q]", got, want)
	}
}

func TestNodeRestriction(t *testing.T) {
	sec := &framework.Security{}
	s := framework.StartAPIServer(t, framework.WithSecurity(sec))
	ctx := ctxT(t)
	for _, n := range []string{"n1", "n2"} {
		if _, err := s.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	onN1 := simplePod("on-n1")
	onN1.Spec.NodeName = "n1"
	if _, err := s.Client.CoreV1().Pods("default").Create(ctx, onN1, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n1 := kubernetes.NewForConfigOrDie(sec.NodeConfigs["n1"])
	labels := func(kv string) []byte { return []byte(`{"metadata":{"labels":{` + kv + `}}}`) }

	cases := []struct {
		name string
		do   func() error
		code int32
		msg  string
	}{
		{"own node gets a kubelet label", func() error {
			_, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, labels(`"topology.kubernetes.io/zone":"a","team":"x"`), metav1.PatchOptions{})
			return err
		}, 200, ""},
		{"own node gets a control-plane label", func() error {
			_, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, labels(`"node-role.kubernetes.io/control-plane":""`), metav1.PatchOptions{})
			return err
		}, 403, `nodes "n1" is forbidden: node "n1" is not allowed to modify labels: node-role.kubernetes.io/control-plane`},
		{"own node gets a node-restriction label", func() error {
			_, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, labels(`"node-restriction.kubernetes.io/pci":"yes"`), metav1.PatchOptions{})
			return err
		}, 403, `node "n1" is not allowed to modify labels: node-restriction.kubernetes.io/pci`},
		{"status of its pod", func() error {
			_, err := n1.CoreV1().Pods("default").Patch(ctx, "on-n1", types.MergePatchType, []byte(`{"status":{"message":"hi"}}`), metav1.PatchOptions{}, "status")
			return err
		}, 200, ""},
		{"labels of its pod through status", func() error {
			_, err := n1.CoreV1().Pods("default").Patch(ctx, "on-n1", types.MergePatchType, labels(`"app":"web"`), metav1.PatchOptions{}, "status")
			return err
		}, 403, `pods "on-n1" is forbidden: node "n1" cannot update labels through pod status`},
		{"own lease", func() error {
			_, err := n1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
			return err
		}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if tc.code == 200 {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			wantStatus(t, err, tc.code, metav1.StatusReasonForbidden, tc.msg)
		})
	}
}

// NodeRestriction lets a node create only mirror pods that it owns and that
// read no API object, as upstream's. The authorizer is AlwaysAllow so that
// admission decides (upstream's Node authorizer lets nodes create pods).
func TestNodeRestrictionMirrorPods(t *testing.T) {
	sec := &framework.Security{Configure: func(o *apiserver.SecurityOptions) { o.AuthorizationModes = []string{apiserver.ModeAlwaysAllow} }}
	s := framework.StartAPIServer(t, framework.WithSecurity(sec))
	ctx := ctxT(t)
	n1Node, err := s.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1UID := n1Node.UID
	mirrorPod := func(name string, owner types.UID) *corev1.Pod {
		p := simplePod(name)
		p.Annotations = map[string]string{"kubernetes.io/config.mirror": "hash"}
		p.Spec.NodeName = "n1"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: owner, Controller: ptr.To(true)}}
		return p
	}
	n1 := kubernetes.NewForConfigOrDie(sec.NodeConfigs["n1"])
	cases := []struct {
		name string
		do   func() error
		code int32
		msg  string
	}{
		{"mirror pod owned by itself", func() error {
			_, err := n1.CoreV1().Pods("default").Create(ctx, mirrorPod("mirror-ok", n1UID), metav1.CreateOptions{})
			return err
		}, 200, ""},
		{"mirror pod owned by nothing", func() error {
			p := mirrorPod("mirror-orphan", n1UID)
			p.OwnerReferences = nil
			_, err := n1.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			return err
		}, 403, `pods "mirror-orphan" is forbidden: node "n1" can only create pods with an owner reference set to itself`},
		{"mirror pod reading a secret", func() error {
			p := mirrorPod("mirror-secret", n1UID)
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
			_, err := n1.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			return err
		}, 403, `node "n1" can not create pods that reference secrets`},
		{"mirror pod owned by an old n1", func() error {
			_, err := n1.CoreV1().Pods("default").Create(ctx, mirrorPod("mirror-stale", "old-uid"), metav1.CreateOptions{})
			return err
		}, 403, `node n1 UID mismatch: expected old-uid got ` + string(n1UID)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if tc.code == 200 {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			wantStatus(t, err, tc.code, metav1.StatusReasonForbidden, tc.msg)
		})
	}
}
