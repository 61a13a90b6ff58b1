package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// APISource reads configMaps and secrets for volumes straight from the API.
type APISource struct{ Client kubernetes.Interface }

func (s APISource) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("configmap %q: %w", name, volume.ErrNotFound)
	}
	return cm, err
}

func (s APISource) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	sec, err := s.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %q: %w", name, volume.ErrNotFound)
	}
	return sec, err
}
