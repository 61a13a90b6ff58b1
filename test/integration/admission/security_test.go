package admission_test

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

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
func TestNodeRestriction(t *testing.T) {
	sec := &framework.Security{}
	s := framework.StartAPIServer(t, framework.WithSecurity(sec))
	ctx := ctxT(t)
	for _, n := range []string{"n1", "n2"} {
		if _, err := s.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
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
