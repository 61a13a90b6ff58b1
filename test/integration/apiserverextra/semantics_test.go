package apiserverextra

import (
	"errors"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestWriteSemantics(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	deps := s.Client.AppsV1().Deployments("default")
	pods := s.Client.CoreV1().Pods("default")

	t.Run("generation moves on spec changes only", func(t *testing.T) {
		d, err := deps.Create(ctx, newDeployment("gen"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Generation != 1 {
			t.Fatalf("generation after create = %d, want 1", d.Generation)
		}
		steps := []struct {
			name  string
			patch string
			want  int64
		}{
			{"label change", `{"metadata":{"labels":{"x":"y"}}}`, 1},
			{"replicas change", `{"spec":{"replicas":3}}`, 2},
			{"template change", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"kube-lite.local/busybox:1.36"}]}}}}`, 3},
			{"status sent to the main endpoint", `{"status":{"replicas":7}}`, 3},
			// Upstream bumps a Deployment's generation on annotation changes
			// too, because they are copied to its ReplicaSets.
			{"annotation change", `{"metadata":{"annotations":{"note":"n"}}}`, 4},
			{"second label change", `{"metadata":{"labels":{"x":"z"}}}`, 4},
		}
		for _, st := range steps {
			d, err = deps.Patch(ctx, "gen", types.StrategicMergePatchType, []byte(st.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if d.Generation != st.want {
				t.Errorf("%s: generation = %d, want %d", st.name, d.Generation, st.want)
			}
		}
	})

	t.Run("main endpoint ignores status, status endpoint ignores spec", func(t *testing.T) {
		d, err := deps.Create(ctx, newDeployment("split"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status.Replicas = 5
		d.Spec.Replicas = ptr.To[int32](4)
		d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.Replicas != 0 || *d.Spec.Replicas != 4 {
			t.Fatalf("update: status.replicas=%d spec.replicas=%d, want 0 and 4", d.Status.Replicas, *d.Spec.Replicas)
		}
		d.Status.Replicas = 5
		d.Status.ObservedGeneration = d.Generation
		d.Spec.Replicas = ptr.To[int32](9)
		d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.Replicas != 5 || *d.Spec.Replicas != 4 {
			t.Fatalf("status update: status.replicas=%d spec.replicas=%d, want 5 and 4", d.Status.Replicas, *d.Spec.Replicas)
		}
		got, err := deps.Get(ctx, "split", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Replicas != 5 || *got.Spec.Replicas != 4 {
			t.Fatalf("stored: status.replicas=%d spec.replicas=%d, want 5 and 4", got.Status.Replicas, *got.Spec.Replicas)
		}
	})

	t.Run("pod status only through /status", func(t *testing.T) {
		p, err := pods.Create(ctx, newPod("status-split"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		p.Labels["seen"] = "yes"
		p, err = pods.Update(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodPending || p.Labels["seen"] != "yes" {
			t.Fatalf("main update: phase=%q labels=%v, want Pending (status ignored) and the label", p.Status.Phase, p.Labels)
		}
		p.Status.Phase = corev1.PodRunning
		p.Spec.Containers[0].Image = "kube-lite.local/busybox:9.9"
		p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning || p.Spec.Containers[0].Image != "kube-lite.local/busybox:1.35" {
			t.Fatalf("status update: phase=%q image=%q, want Running and the image unchanged", p.Status.Phase, p.Spec.Containers[0].Image)
		}
	})

	t.Run("dryRun=All persists nothing", func(t *testing.T) {
		dry := []string{metav1.DryRunAll}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}, Data: map[string]string{"k": "v"}}
		out, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{DryRun: dry})
		if err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		if out.Data["k"] != "v" {
			t.Errorf("dry-run create returned %v", out.Data)
		}
		if _, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after dry-run create, get = %v, want NotFound", err)
		}
		if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client.CoreV1().ConfigMaps("default").Patch(ctx, "dry", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{DryRun: dry}); err != nil {
			t.Fatalf("dry-run patch: %v", err)
		}
		got, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "dry", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Data["k"] != "v" {
			t.Fatalf("dry-run patch persisted: data = %v", got.Data)
		}
	})

	t.Run("second binding is a conflict", func(t *testing.T) {
		if _, err := pods.Create(ctx, newPod("bind-twice"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(ctx, t, s, "bind-twice", "node-1")
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bind-twice"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-2"}}
		want := `Operation cannot be fulfilled on pods/binding "bind-twice": pod bind-twice is already assigned to node "node-1"`
		if err := pods.Bind(ctx, b, metav1.CreateOptions{}); !apierrors.IsConflict(err) || err.Error() != want {
			t.Fatalf("second bind = %v, want 409 %s", err, want)
		}
		got, err := pods.Get(ctx, "bind-twice", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "node-1" {
			t.Fatalf("spec.nodeName = %q after a refused second bind, want node-1", got.Spec.NodeName)
		}
	})

	t.Run("bad bindings are refused as upstream's", func(t *testing.T) {
		gated := newPod("bind-gated")
		gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		if _, err := pods.Create(ctx, gated, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node := corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		for _, tc := range []struct {
			name string
			b    *corev1.Binding
			code int32
			want string
		}{
			{"another name", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Target: node}, 400, "name in URL does not match name in Binding object"},
			{"no name", &corev1.Binding{Target: node}, 400, "name in URL does not match name in Binding object"},
			{"another namespace", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bind-gated", Namespace: "kube-system"}, Target: node}, 400,
				"the namespace of the provided object does not match the namespace sent on the request"},
			{"not a node, no name", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bind-gated"}, Target: corev1.ObjectReference{Kind: "Pod"}}, 422,
				`Binding "bind-gated" is invalid: [target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>", target.name: Required value]`},
			{"a gated pod", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bind-gated"}, Target: node}, 409,
				`Operation cannot be fulfilled on pods/binding "bind-gated": pod bind-gated has non-empty .spec.schedulingGates`},
		} {
			path := "/api/v1/namespaces/default/pods/bind-gated/binding"
			err := s.Client.CoreV1().RESTClient().Post().AbsPath(path).Body(tc.b).Do(ctx).Error()
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != tc.code || se.ErrStatus.Message != tc.want {
				t.Errorf("%s: %v, want %d %s", tc.name, err, tc.code, tc.want)
			}
		}
		if got, err := pods.Get(ctx, "bind-gated", metav1.GetOptions{}); err != nil || got.Spec.NodeName != "" {
			t.Fatalf("gated pod after refused bindings: %v, nodeName %q; want unbound", err, got.Spec.NodeName)
		}
	})

	t.Run("binding clears the nominated node", func(t *testing.T) {
		p, err := pods.Create(ctx, newPod("bind-nominated"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.NominatedNodeName = "node-2"
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(ctx, t, s, "bind-nominated", "node-1")
		got, err := pods.Get(ctx, "bind-nominated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName != "" {
			t.Fatalf("status.nominatedNodeName = %q after binding, want it cleared", got.Status.NominatedNodeName)
		}
	})

	t.Run("stale resourceVersion on update is a conflict", func(t *testing.T) {
		cm, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stale"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first := cm.DeepCopy()
		cm.Data = map[string]string{"a": "1"}
		if _, err := s.Client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		first.Data = map[string]string{"a": "2"}
		if _, err := s.Client.CoreV1().ConfigMaps("default").Update(ctx, first, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("update with stale resourceVersion = %v, want 409", err)
		}
	})

	t.Run("namespace missing is 404, terminating is 403", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		if _, err := s.Client.CoreV1().ConfigMaps("nowhere").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("create in a missing namespace = %v, want 404", err)
		}
		if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Client.CoreV1().Namespaces().Delete(ctx, "leaving", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ns, err := s.Client.CoreV1().Namespaces().Get(ctx, "leaving", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace gone at once, want Terminating (no namespace controller runs here): %v", err)
		}
		if ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("phase = %q, want Terminating", ns.Status.Phase)
		}
		_, err = s.Client.CoreV1().ConfigMaps("leaving").Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("create in a terminating namespace = %v, want 403", err)
		}
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			t.Errorf("403 lacks the %s cause: %v", corev1.NamespaceTerminatingCause, err)
		}
	})

	t.Run("invalid object is 422 with field causes", func(t *testing.T) {
		p := newPod("Bad_Name")
		p.Spec.Containers[0].Image = ""
		p.Spec.RestartPolicy = "Sometimes"
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create = %v, want 422 Invalid", err)
		}
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Details == nil {
			t.Fatalf("no details in %v", err)
		}
		fields := map[string]bool{}
		for _, c := range status.Status().Details.Causes {
			fields[c.Field] = true
		}
		for _, f := range []string{"metadata.name", "spec.containers[0].image", "spec.restartPolicy"} {
			if !fields[f] {
				t.Errorf("no cause for field %s; causes: %+v", f, status.Status().Details.Causes)
			}
		}
	})
}

// TestCreateOnUpdate: as upstream, a PUT of a missing lease, service, event,
// RBAC object or limit range creates it (201); other kinds stay a 404.
func TestCreateOnUpdate(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	leases := s.Client.CoordinationV1().Leases("default")
	l, err := leases.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "put-created"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me")}}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("PUT of a missing lease: %v, want it created", err)
	}
	if l.UID == "" || l.ResourceVersion == "" || l.CreationTimestamp.IsZero() || *l.Spec.HolderIdentity != "me" {
		t.Errorf("created lease = %+v, want uid, resourceVersion and creationTimestamp set", l.ObjectMeta)
	}
	l.Spec.HolderIdentity = ptr.To("you")
	if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil || *l.Spec.HolderIdentity != "you" {
		t.Errorf("then a PUT updates it: %v", err)
	}
	if _, err := leases.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "with-rv", ResourceVersion: "5"}}, metav1.UpdateOptions{}); err != nil {
		t.Errorf("PUT of a missing lease naming a resourceVersion: %v, want it created as upstream", err)
	}
	if _, err := s.Client.RbacV1().Roles("default").Update(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "put-created"}}, metav1.UpdateOptions{}); err != nil {
		t.Errorf("PUT of a missing role: %v, want it created", err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps("default").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "put-missing"}}, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PUT of a missing configmap: %v, want 404 as upstream", err)
	}
}
