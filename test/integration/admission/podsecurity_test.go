package admission_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/podsecurity"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// labelPatch sets labels as `kubectl label ns --overwrite` does.
func labelPatch(labels string) []byte {
	return []byte(`{"metadata":{"labels":{` + labels + `}}}`)
}

// TestPodSecurityNamespaceLabels: bad pod-security label values are refused
// with upstream's 422, naming the label and what it must be, on create and
// on `kubectl label`.
func TestPodSecurityNamespaceLabels(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"}}}
	_, err := s.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid,
		`Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`)
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		d := st.Status().Details
		if d == nil || d.Kind != "Namespace" || d.Name != "bad" || len(d.Causes) != 1 ||
			d.Causes[0].Field != "metadata.labels[pod-security.kubernetes.io/enforce]" || d.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
			t.Errorf("details %+v, want the Namespace and one cause for the enforce label", d)
		}
	}

	createNamespace(t, s.Client, "team", nil)
	_, err = s.Client.CoreV1().Namespaces().Patch(ctx, "team", types.MergePatchType,
		labelPatch(`"pod-security.kubernetes.io/audit":"baseline","pod-security.kubernetes.io/warn-version":"1.36"`), metav1.PatchOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid,
		`Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.36": must be "latest" or "v1.x"`)

	// Audit has no effect kube-lite can show (no audit log), but its labels
	// are accepted as upstream accepts them.
	if _, err := s.Client.CoreV1().Namespaces().Patch(ctx, "team", types.MergePatchType,
		labelPatch(`"pod-security.kubernetes.io/audit":"restricted","pod-security.kubernetes.io/audit-version":"v1.36"`), metav1.PatchOptions{}); err != nil {
		t.Errorf("valid audit labels: %v", err)
	}
}

// TestPodSecurityPodUpdate: a pod created before its namespace enforced
// restricted keeps taking metadata and status updates, but an image change
// is checked and refused, as upstream.
func TestPodSecurityPodUpdate(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "grown", nil)
	pods := s.Client.CoreV1().Pods("grown")
	if _, err := pods.Create(ctx, simplePod("old"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Namespaces().Patch(ctx, "grown", types.MergePatchType,
		labelPatch(`"pod-security.kubernetes.io/enforce":"restricted"`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label namespace: %v", err)
	}

	// kubectl label pod old tier=web
	if _, err := pods.Patch(ctx, "old", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"tier":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("metadata-only update refused: %v", err)
	}
	pod, err := pods.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "example.com/ready", Status: corev1.ConditionTrue})
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Errorf("status update refused: %v", err)
	}

	// kubectl set image pod/old c=nginx
	_, err = pods.Patch(ctx, "old", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"c","image":"nginx"}]}}`), metav1.PatchOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`pods "old" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`)
	if got, err := pods.Get(ctx, "old", metav1.GetOptions{}); err != nil || got.Spec.Containers[0].Image != "busybox" {
		t.Errorf("after the refused update: %v, %v; want image busybox", got, err)
	}
}

// TestPodSecurityNamespaceWarnings: `kubectl label ns ... enforce=baseline`
// on a namespace with violating pods prints upstream's warnings.
func TestPodSecurityNamespaceWarnings(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "legacy", nil)
	yes := true
	for _, name := range []string{"priv-b", "priv-a", "plain"} {
		p := simplePod(name)
		if strings.HasPrefix(name, "priv") {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}
		if _, err := s.Client.CoreV1().Pods("legacy").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hostNet := simplePod("net")
	hostNet.Spec.HostNetwork = true
	if _, err := s.Client.CoreV1().Pods("legacy").Create(ctx, hostNet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rec := &warningRecorder{}
	cfg := rest.CopyConfig(s.Config)
	cfg.WarningHandler = rec
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, "legacy", types.MergePatchType,
		labelPatch(`"pod-security.kubernetes.io/enforce":"baseline"`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label namespace: %v", err)
	}
	want := []string{
		`existing pods in namespace "legacy" violate the new PodSecurity enforce level "baseline:latest"`,
		`net: host namespaces`,
		`priv-a (and 1 other pod): privileged`,
	}
	if got := rec.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Relaxing the level, or setting it again, checks nothing.
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, "legacy", types.MergePatchType,
		labelPatch(`"pod-security.kubernetes.io/enforce":"baseline","team":"a"`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("unchanged enforce level warned %q", got)
	}
}

// TestPodSecurityConfiguration: an AdmissionConfiguration's PodSecurity
// defaults hold namespaces without labels to a level, and its exempt
// namespaces are never checked, as upstream's.
func TestPodSecurityConfiguration(t *testing.T) {
	s := framework.StartAPIServer(t, framework.WithPodSecurity(&podsecurity.Config{
		Defaults:   podsecurity.Defaults{Enforce: "baseline"},
		Exemptions: podsecurity.Exemptions{Namespaces: []string{"exempt"}},
	}))
	ctx := ctxT(t)
	createNamespace(t, s.Client, "plain", nil)
	createNamespace(t, s.Client, "exempt", nil)
	createNamespace(t, s.Client, "opted-out", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})
	yes := true
	priv := simplePod("priv")
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	_, err := s.Client.CoreV1().Pods("plain").Create(ctx, priv, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`)
	for _, ns := range []string{"exempt", "opted-out"} {
		if _, err := s.Client.CoreV1().Pods(ns).Create(ctx, priv, metav1.CreateOptions{}); err != nil {
			t.Errorf("privileged pod in %s: %v, want it created", ns, err)
		}
	}
}
