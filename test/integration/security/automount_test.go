package security_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// A pod created through the API gets the automatic token volume, mounted in
// each of its containers, unless it opts out.
func TestPodGetsTheTokenVolume(t *testing.T) {
	s, _ := startSecure(t, nil)
	ctx := ctxT(t)
	pod := boundPod("auto", "")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	got, err := s.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Volumes) != 1 || !strings.HasPrefix(got.Spec.Volumes[0].Name, "kube-api-access-") || got.Spec.Volumes[0].Projected == nil {
		t.Fatalf("volumes %+v", got.Spec.Volumes)
	}
	vol := got.Spec.Volumes[0]
	srcs := vol.Projected.Sources
	if len(srcs) != 3 || srcs[0].ServiceAccountToken == nil || *srcs[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
		srcs[1].ConfigMap == nil || srcs[1].ConfigMap.Name != "kube-root-ca.crt" || srcs[2].DownwardAPI == nil {
		t.Fatalf("projection %+v", vol.Projected)
	}
	for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		want := corev1.VolumeMount{Name: vol.Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0] != want {
			t.Errorf("container %s mounts %+v, want %+v", c.Name, c.VolumeMounts, want)
		}
	}

	optOut := boundPod("manual", "")
	optOut.Spec.AutomountServiceAccountToken = ptr.To(false)
	got, err = s.Client.CoreV1().Pods("default").Create(ctx, optOut, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Volumes) != 0 || len(got.Spec.Containers[0].VolumeMounts) != 0 {
		t.Fatalf("opted-out pod got %+v / %+v", got.Spec.Volumes, got.Spec.Containers[0].VolumeMounts)
	}
}

// An apiserver without a service-account signing key cannot issue the
// token, so it adds no volume that would keep every pod waiting.
func TestNoTokenVolumeWithoutSigningKey(t *testing.T) {
	s := framework.StartAPIServer(t)
	got, err := s.Client.CoreV1().Pods("default").Create(ctxT(t), boundPod("plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Volumes) != 0 || len(got.Spec.Containers[0].VolumeMounts) != 0 {
		t.Fatalf("volumes %+v, mounts %+v", got.Spec.Volumes, got.Spec.Containers[0].VolumeMounts)
	}
}

// The automatic volume's request (3607 s, bound to a pod, for the API) is
// shown as the hour asked for, but its token lasts a year and says when
// the hour ended (warnafter): upstream's extended expiry. Any other
// request gets what it asked for.
func TestAutomaticTokenHasExtendedExpiry(t *testing.T) {
	s, _ := startSecure(t, nil)
	ctx := ctxT(t)
	ensureServiceAccount(t, s.Client, "default")
	pod, err := s.Client.CoreV1().Pods("default").Create(ctx, boundPod("p", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	request := func(seconds int64) (*authnv1.TokenRequest, claims) {
		t.Helper()
		tr, err := s.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: pod.UID},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token request: %v", err)
		}
		return tr, decodeClaims(t, tr.Status.Token)
	}
	const year = 365 * 24 * 60 * 60
	tr, c := request(3607)
	if shown := tr.Status.ExpirationTimestamp.Unix() - c.IssuedAt; shown < 3606 || shown > 3608 {
		t.Errorf("status expiry %d s after issue, want 3607", shown)
	}
	if c.Expiry-c.IssuedAt != year || c.Kubernetes.WarnAfter-c.IssuedAt != 3607 {
		t.Errorf("token exp %d s and warnafter %d s after issue, want a year and 3607", c.Expiry-c.IssuedAt, c.Kubernetes.WarnAfter-c.IssuedAt)
	}
	tr, c = request(3600)
	if c.Expiry-c.IssuedAt != 3600 || c.Kubernetes.WarnAfter != 0 || tr.Status.ExpirationTimestamp.Unix() != c.Expiry {
		t.Errorf("plain request: exp %d s after issue, warnafter %d, status %v", c.Expiry-c.IssuedAt, c.Kubernetes.WarnAfter, tr.Status.ExpirationTimestamp.Time.Sub(time.Unix(c.IssuedAt, 0)))
	}
}

type claims struct {
	Expiry     int64 `json:"exp"`
	IssuedAt   int64 `json:"iat"`
	Kubernetes struct {
		WarnAfter int64 `json:"warnafter"`
	} `json:"kubernetes.io"`
}

func decodeClaims(t *testing.T, token string) claims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c claims
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
