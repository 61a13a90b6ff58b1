package kubelet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// APISource reads configMaps and secrets for volumes straight from the
// API, and requests service-account tokens for projected volumes.
type APISource struct {
	Client kubernetes.Interface
	Clock  clock.PassiveClock
	tokens *tokenCache
}

// NewAPISource returns a source with a token cache.
func NewAPISource(client kubernetes.Interface, c clock.PassiveClock) APISource {
	return APISource{Client: client, Clock: c, tokens: &tokenCache{m: map[string]cachedToken{}}}
}

type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedToken
}

type cachedToken struct {
	token   string
	refresh time.Time
}

// maxTokenAge is how long a token is used at most, however long it lives
// (upstream's token manager's maxTTL).
const maxTokenAge = 24 * time.Hour

// Token returns a token for the pod's service account, bound to the pod;
// a cached one is reused until 80 % of its lifetime has passed, or a day
// (upstream's token manager's rules). The lifetime is the one the
// TokenRequest's status shows: the hour asked for by the automatic volume,
// even when the apiserver extended the token itself to a year. Each sync
// of a pod sets its volumes up again, so a running pod's token file is
// rewritten (atomically) once its token is due.
func (s APISource) Token(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (string, error) {
	key := fmt.Sprintf("%s/%s/%d", pod.UID, audience, expirationSeconds)
	now := time.Now()
	if s.Clock != nil {
		now = s.Clock.Now()
	}
	if s.tokens != nil {
		s.tokens.mu.Lock()
		c, ok := s.tokens.m[key]
		s.tokens.mu.Unlock()
		if ok && now.Before(c.refresh) {
			return c.token, nil
		}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := s.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	if s.tokens != nil {
		life := time.Duration(expirationSeconds) * time.Second
		if !tr.Status.ExpirationTimestamp.IsZero() {
			life = tr.Status.ExpirationTimestamp.Sub(now)
		}
		s.tokens.mu.Lock()
		s.tokens.m[key] = cachedToken{token: tr.Status.Token, refresh: now.Add(min(life*8/10, maxTokenAge))}
		s.tokens.mu.Unlock()
	}
	return tr.Status.Token, nil
}

// ForgetPod drops a gone pod's cached tokens (the volume manager calls it
// when it tears the pod's volumes down).
func (s APISource) ForgetPod(uid types.UID) {
	if s.tokens == nil {
		return
	}
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	for k := range s.tokens.m {
		if strings.HasPrefix(k, string(uid)+"/") {
			delete(s.tokens.m, k)
		}
	}
}

func (s APISource) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, volume.ErrNotFound
	}
	return cm, err
}

func (s APISource) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	sec, err := s.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, volume.ErrNotFound
	}
	return sec, err
}
