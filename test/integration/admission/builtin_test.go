package admission_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestResourceQuotaConcurrentCreates(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "quota", nil)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "3")}}
	if _, err := s.Client.CoreV1().ResourceQuotas("quota").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Client.CoreV1().Pods("quota").Create(ctx, simplePod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		if err == nil {
			created++
			continue
		}
		wantStatus(t, err, 403, metav1.StatusReasonForbidden, "exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3")
	}
	if created != 3 {
		t.Fatalf("%d creates succeeded, want exactly 3", created)
	}
	pods, err := s.Client.CoreV1().Pods("quota").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("stored pods: %d (%v), want 3", len(pods.Items), err)
	}
	got, err := s.Client.CoreV1().ResourceQuotas("quota").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Status.Used["pods"]; u.String() != "3" {
		t.Errorf("status.used.pods = %s, want 3", u.String())
	}

	// Deleting a pod frees its place for the next one.
	zero := int64(0)
	if err := s.Client.CoreV1().Pods("quota").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Pods("quota").Create(ctx, simplePod("after-delete"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}
}

func TestResourceQuotaComputeResources(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "compute", nil)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: rl("requests.cpu", "1", "limits.memory", "1Gi")}}
	if _, err := s.Client.CoreV1().ResourceQuotas("compute").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withResources := func(name, cpu, mem string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", cpu), Limits: rl("cpu", cpu, "memory", mem)}
		return p
	}
	if _, err := s.Client.CoreV1().Pods("compute").Create(ctx, withResources("a", "600m", "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Client.CoreV1().Pods("compute").Create(ctx, withResources("b", "600m", "256Mi"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1`)
	_, err = s.Client.CoreV1().Pods("compute").Create(ctx, simplePod("none"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "none" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c`)
}

func TestLimitRangerDefaults(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "limits", nil)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "64Mi"),
		Max: rl("cpu", "1"),
	}}}}
	if _, err := s.Client.CoreV1().LimitRanges("limits").Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Pods("limits").Create(ctx, simplePod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Client.CoreV1().Pods("limits").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := got.Spec.Containers[0].Resources
	for _, c := range []struct {
		list corev1.ResourceList
		name corev1.ResourceName
		want string
	}{{res.Requests, "cpu", "100m"}, {res.Requests, "memory", "64Mi"}, {res.Limits, "cpu", "500m"}, {res.Limits, "memory", "256Mi"}} {
		if q := c.list[c.name]; q.String() != c.want {
			t.Errorf("stored %s = %q, want %s (resources %+v)", c.name, q.String(), c.want, res)
		}
	}
	if got.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("qosClass %q, want Burstable from the defaulted resources", got.Status.QOSClass)
	}

	big := simplePod("big")
	big.Spec.Containers[0].Resources.Limits = rl("cpu", "2")
	_, err = s.Client.CoreV1().Pods("limits").Create(ctx, big, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `maximum cpu usage per Container is 1, but limit is 2`)
}

func TestDefaultTolerationsAndServiceAccount(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "team", nil)
	if _, err := s.Client.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("new namespace has no default service account: %v", err)
	}
	if _, err := s.Client.CoreV1().Pods("team").Create(ctx, simplePod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Client.CoreV1().Pods("team").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default", got.Spec.ServiceAccountName)
	}
	seen := map[string]int64{}
	for _, tol := range got.Spec.Tolerations {
		if tol.Effect == corev1.TaintEffectNoExecute && tol.Operator == corev1.TolerationOpExists && tol.TolerationSeconds != nil {
			seen[tol.Key] = *tol.TolerationSeconds
		}
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if seen[key] != 300 {
			t.Errorf("toleration of %s: %d s, want 300 (tolerations %+v)", key, seen[key], got.Spec.Tolerations)
		}
	}

	// The default account is made again when it has gone missing.
	if err := s.Client.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Pods("team").Create(ctx, simplePod("q"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod create with the default account deleted: %v", err)
	}
	if _, err := s.Client.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("default account not recreated: %v", err)
	}

	robot := simplePod("robot")
	robot.Spec.ServiceAccountName = "robot"
	_, err = s.Client.CoreV1().Pods("team").Create(ctx, robot, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "robot" is forbidden: error looking up service account team/robot: serviceaccount "robot" not found`)
}

func TestResourceQuotaObjectCounts(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "counts", nil)
	cms := s.Client.CoreV1().ConfigMaps("counts")
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	// Objects from before the quota count too.
	if _, err := cms.Create(ctx, cm("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "objects"}, Spec: corev1.ResourceQuotaSpec{Hard: rl("count/configmaps", "2", "secrets", "0")}}
	if _, err := s.Client.CoreV1().ResourceQuotas("counts").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, cm("second"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := cms.Create(ctx, cm("third"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`configmaps "third" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2`)
	_, err = s.Client.CoreV1().Secrets("counts").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, "exceeded quota: objects, requested: secrets=1, used: secrets=0, limited: secrets=0")

	if err := cms.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, cm("third"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after a delete freed room: %v", err)
	}
	got, err := s.Client.CoreV1().ResourceQuotas("counts").Get(ctx, "objects", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Status.Used["count/configmaps"]; u.String() != "2" {
		t.Errorf("status.used count/configmaps = %s, want 2", u.String())
	}
}
