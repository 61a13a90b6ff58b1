package security_test

import (
	"strings"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestViewerMayReadButNotWrite(t *testing.T) {
	_, sec := startSecure(t, nil)
	ctx := ctxT(t)
	viewer := client(t, sec.Viewer)
	if _, err := viewer.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("viewer list pods: %v", err)
	}
	_, err := viewer.CoreV1().Pods("default").Create(ctx, boundPod("p", ""), metav1.CreateOptions{})
	st := wantStatus(t, "viewer creates a pod", err, 403, metav1.StatusReasonForbidden)
	want := `pods is forbidden: User "viewer" cannot create resource "pods" in API group "" in the namespace "default"`
	if st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	_, err = viewer.CoreV1().Secrets("default").Get(ctx, "x", metav1.GetOptions{})
	st = wantStatus(t, "viewer reads a secret", err, 403, metav1.StatusReasonForbidden)
	if want := `secrets "x" is forbidden: User "viewer" cannot get resource "secrets" in API group "" in the namespace "default"`; st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	_, err = viewer.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	st = wantStatus(t, "viewer lists nodes", err, 403, metav1.StatusReasonForbidden)
	if want := `nodes is forbidden: User "viewer" cannot list resource "nodes" in API group "" at the cluster scope`; st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	// Discovery is for every authenticated user.
	if _, err := viewer.Discovery().ServerGroups(); err != nil {
		t.Fatalf("viewer discovery: %v", err)
	}
}

func TestRoleBindingGrantsInItsNamespaceOnly(t *testing.T) {
	s, sec := startSecure(t, nil)
	ctx := ctxT(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-writer", Namespace: "default"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"create", "get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}},
	}
	if _, err := s.Client.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "carol-cm", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}},
	}
	if _, err := s.Client.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	carolCfg := sec.CertConfig(t, "carol", "devs")
	framework.WaitAllowed(t, carolCfg, &authzv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "default"})
	carol := client(t, carolCfg)
	_, err := carol.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	wantStatus(t, "carol creates a configmap in default", err, 200, "")
	_, err = carol.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	wantStatus(t, "carol creates a configmap in kube-system", err, 403, metav1.StatusReasonForbidden)
	err = carol.CoreV1().ConfigMaps("default").Delete(ctx, "c", metav1.DeleteOptions{})
	wantStatus(t, "carol deletes the configmap", err, 403, metav1.StatusReasonForbidden)
}

func TestNodeAuthorizer(t *testing.T) {
	s, sec := startSecure(t, nil)
	ctx := ctxT(t)
	createNode(t, s.Client, "n1")
	createNode(t, s.Client, "n2")
	ensureServiceAccount(t, s.Client, "default")
	for _, name := range []string{"used-on-n1", "used-on-n2", "unused"} {
		if _, err := s.Client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client.CoreV1().Pods("default").Create(ctx, boundPod("on-n1", "n1", "used-on-n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Pods("default").Create(ctx, boundPod("on-n2", "n2", "used-on-n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No waiting for the node graph's watch: what it has not seen yet,
	// the authorizer confirms in storage.
	n1 := client(t, sec.NodeConfigs["n1"])
	status := []byte(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":null,"lastTransitionTime":null}]}}`)
	podStatus := []byte(`{"status":{"phase":"Running"}}`)

	cases := []struct {
		name   string
		do     func() error
		code   int32
		reason metav1.StatusReason
		msg    string
	}{
		{"patch own node status", func() error {
			_, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
			return err
		}, 200, "", ""},
		{"patch another node", func() error {
			_, err := n1.CoreV1().Nodes().Patch(ctx, "n2", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		}, 403, metav1.StatusReasonForbidden,
			`nodes "n2" is forbidden: User "system:node:n1" cannot patch resource "nodes" in API group "" at the cluster scope: can only modify its own Node`},
		{"patch another node's status", func() error {
			_, err := n1.CoreV1().Nodes().Patch(ctx, "n2", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
			return err
		}, 403, metav1.StatusReasonForbidden, ""},
		{"read every node", func() error { _, err := n1.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{}); return err }, 200, "", ""},
		{"patch status of own pod", func() error {
			_, err := n1.CoreV1().Pods("default").Patch(ctx, "on-n1", types.StrategicMergePatchType, podStatus, metav1.PatchOptions{}, "status")
			return err
		}, 200, "", ""},
		{"patch status of a pod on n2", func() error {
			_, err := n1.CoreV1().Pods("default").Patch(ctx, "on-n2", types.StrategicMergePatchType, podStatus, metav1.PatchOptions{}, "status")
			return err
		}, 403, metav1.StatusReasonForbidden,
			`pods "on-n2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{"patch a pod on n2", func() error {
			_, err := n1.CoreV1().Pods("default").Patch(ctx, "on-n2", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		}, 403, metav1.StatusReasonForbidden, ""},
		{"get own pod", func() error { _, err := n1.CoreV1().Pods("default").Get(ctx, "on-n1", metav1.GetOptions{}); return err }, 200, "", ""},
		{"get a pod on n2", func() error { _, err := n1.CoreV1().Pods("default").Get(ctx, "on-n2", metav1.GetOptions{}); return err }, 403, metav1.StatusReasonForbidden, ""},
		{"watch pods bound to it", func() error {
			_, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
			return err
		}, 200, "", ""},
		{"read a secret its pod uses", func() error {
			_, err := n1.CoreV1().Secrets("default").Get(ctx, "used-on-n1", metav1.GetOptions{})
			return err
		}, 200, "", ""},
		{"watch a secret its pod uses", func() error {
			_, err := n1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=used-on-n1"})
			return err
		}, 200, "", ""},
		{"read a secret only a pod on n2 uses", func() error {
			_, err := n1.CoreV1().Secrets("default").Get(ctx, "used-on-n2", metav1.GetOptions{})
			return err
		}, 403, metav1.StatusReasonForbidden, ""},
		{"read a secret no pod uses", func() error {
			_, err := n1.CoreV1().Secrets("default").Get(ctx, "unused", metav1.GetOptions{})
			return err
		}, 403, metav1.StatusReasonForbidden,
			`secrets "unused" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object`},
		{"list secrets", func() error { _, err := n1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); return err }, 403, metav1.StatusReasonForbidden, ""},
		{"create an event", func() error {
			_, err := n1.CoreV1().Events("default").Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "e1"},
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"},
				Reason:         "Starting", Message: "kubelet starting", Type: corev1.EventTypeNormal,
			}, metav1.CreateOptions{})
			return err
		}, 200, "", ""},
		{"create a configmap", func() error {
			_, err := n1.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}, 403, metav1.StatusReasonForbidden, ""},
		{"delete a pod on n2", func() error { return n1.CoreV1().Pods("default").Delete(ctx, "on-n2", metav1.DeleteOptions{}) }, 403, metav1.StatusReasonForbidden, ""},
		// Kubelets take 404 as "already gone"; a 403 would have them retry.
		{"delete a pod that is gone", func() error { return n1.CoreV1().Pods("default").Delete(ctx, "gone", metav1.DeleteOptions{}) }, 404, metav1.StatusReasonNotFound, ""},
		{"patch status of a pod that is gone", func() error {
			_, err := n1.CoreV1().Pods("default").Patch(ctx, "gone", types.StrategicMergePatchType, podStatus, metav1.PatchOptions{}, "status")
			return err
		}, 404, metav1.StatusReasonNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := wantStatus(t, tc.name, tc.do(), tc.code, tc.reason)
			if tc.msg != "" && st.Message != tc.msg {
				t.Fatalf("message\n got %s\nwant %s", st.Message, tc.msg)
			}
		})
	}
}

func TestCanI(t *testing.T) {
	_, sec := startSecure(t, nil)
	ctx := ctxT(t)
	viewer := client(t, sec.Viewer)
	cases := []struct {
		ra    *authzv1.ResourceAttributes
		nra   *authzv1.NonResourceAttributes
		allow bool
	}{
		{ra: &authzv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"}, allow: true},
		{ra: &authzv1.ResourceAttributes{Verb: "get", Resource: "deployments", Group: "apps", Namespace: "kube-system"}, allow: true},
		{ra: &authzv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}},
		{ra: &authzv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "default"}},
		{ra: &authzv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}},
		{nra: &authzv1.NonResourceAttributes{Verb: "get", Path: "/apis"}, allow: true},
		{nra: &authzv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}},
	}
	for _, tc := range cases {
		r, err := viewer.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: tc.ra, NonResourceAttributes: tc.nra},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("review %+v %+v: %v", tc.ra, tc.nra, err)
		}
		if r.Status.Allowed != tc.allow {
			t.Errorf("can-i %+v %+v: allowed=%v, want %v", tc.ra, tc.nra, r.Status.Allowed, tc.allow)
		}
	}
	// Admins may ask for others; viewers may not.
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: "viewer",
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "watch", Resource: "pods", Namespace: "default"}}}
	r, err := client(t, sec.Admin).AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil || !r.Status.Allowed {
		t.Fatalf("admin asks for viewer: %v %+v", err, r)
	}
	_, err = viewer.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	wantStatus(t, "viewer asks for someone", err, 403, metav1.StatusReasonForbidden)
}

func TestRulesReview(t *testing.T) {
	_, sec := startSecure(t, nil)
	r, err := client(t, sec.Viewer).AuthorizationV1().SelfSubjectRulesReviews().Create(ctxT(t),
		&authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listsPods, createsPods := false, false
	for _, rule := range r.Status.ResourceRules {
		for _, res := range rule.Resources {
			if res == "pods" && contains(rule.APIGroups, "") {
				listsPods = listsPods || contains(rule.Verbs, "list")
				createsPods = createsPods || contains(rule.Verbs, "create")
			}
		}
	}
	if !listsPods || createsPods {
		t.Fatalf("viewer rules: list pods %v, create pods %v: %+v", listsPods, createsPods, r.Status.ResourceRules)
	}
	if len(r.Status.NonResourceRules) == 0 {
		t.Fatalf("viewer has no discovery rules: %+v", r.Status)
	}
	// The Node mode grants nothing to a user that is not a kubelet, so
	// the viewer's list is complete (kubectl prints no warning) ...
	if r.Status.Incomplete {
		t.Fatalf("viewer's rules incomplete: %q", r.Status.EvaluationError)
	}
	// ... and a kubelet's is not: the Node mode cannot list what it allows.
	r, err = client(t, sec.NodeConfigs["n1"]).AuthorizationV1().SelfSubjectRulesReviews().Create(ctxT(t),
		&authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Status.Incomplete || !strings.Contains(r.Status.EvaluationError, "node authorizer") {
		t.Fatalf("kubelet's rules: incomplete %v, error %q; want incomplete, saying why", r.Status.Incomplete, r.Status.EvaluationError)
	}
}

// TestComponentIdentities checks the bootstrap roles give the scheduler
// and the controller-manager what they do, and not more.
func TestComponentIdentities(t *testing.T) {
	_, sec := startSecure(t, nil)
	ctx := ctxT(t)
	sched := client(t, sec.Scheduler)
	cm := client(t, sec.ControllerManager)
	cases := []struct {
		name string
		do   func() error
		code int32
	}{
		{"scheduler watches pods", func() error { _, err := sched.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); return err }, 200},
		{"scheduler lists nodes", func() error { _, err := sched.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); return err }, 200},
		{"scheduler reads no secrets", func() error { _, err := sched.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err }, 403},
		{"controller-manager lists replicasets", func() error { _, err := cm.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{}); return err }, 200},
		{"controller-manager creates pods", func() error {
			_, err := cm.CoreV1().Pods("default").Create(ctx, boundPod("from-rs", ""), metav1.CreateOptions{})
			return err
		}, 200},
		{"controller-manager edits no RBAC", func() error {
			_, err := cm.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}, 403},
	}
	ensureServiceAccount(t, client(t, sec.Admin), "default")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason := metav1.StatusReason("")
			if tc.code == 403 {
				reason = metav1.StatusReasonForbidden
			}
			wantStatus(t, tc.name, tc.do(), tc.code, reason)
		})
	}
}

// TestNoEscalationThroughRBAC: a namespace admin may hand out what they
// hold, not more.
func TestNoEscalationThroughRBAC(t *testing.T) {
	s, sec := startSecure(t, nil)
	ctx := ctxT(t)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dave-admin", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dave"}},
	}
	if _, err := s.Client.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	daveCfg := sec.CertConfig(t, "dave")
	framework.WaitAllowed(t, daveCfg, &authzv1.ResourceAttributes{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: "default"})
	dave := client(t, daveCfg)

	bind := func(name, clusterRole string) error {
		_, err := dave.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "erin"}},
		}, metav1.CreateOptions{})
		return err
	}
	wantStatus(t, "dave grants view in his namespace", bind("erin-view", "view"), 200, "")
	st := wantStatus(t, "dave grants cluster-admin", bind("erin-root", "cluster-admin"), 403, metav1.StatusReasonForbidden)
	if !strings.Contains(st.Message, `user "dave" is attempting to grant RBAC permissions not currently held`) {
		t.Fatalf("message: %s", st.Message)
	}
	_, err := dave.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "node-killer", Namespace: "default"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"nodes"}}},
	}, metav1.CreateOptions{})
	wantStatus(t, "dave writes a role beyond his own", err, 403, metav1.StatusReasonForbidden)
}
