//go:build e2e

package e2eutil

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Eventually polls cond until it holds; the long ceiling only bounds a
// broken cluster, it asserts nothing about speed.
func Eventually(ctx context.Context, what string, cond func(ctx context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, cond); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// PodReady tells whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// IntOrString is a numeric port as probes and services take it.
func IntOrString(port int) intstr.IntOrString { return intstr.FromInt32(int32(port)) }

// TokenKubeconfig is a kubeconfig with one context whose user presents a
// bearer token; cluster and user are named after the context.
type TokenKubeconfig struct {
	Server    string
	CAPEM     []byte
	Token     string
	Context   string
	Namespace string
}

// Write writes the kubeconfig to path.
func (k TokenKubeconfig) Write(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[k.Context+"-cluster"] = &clientcmdapi.Cluster{Server: k.Server, CertificateAuthorityData: k.CAPEM}
	cfg.AuthInfos[k.Context+"-user"] = &clientcmdapi.AuthInfo{Token: k.Token}
	cfg.Contexts[k.Context] = &clientcmdapi.Context{Cluster: k.Context + "-cluster", AuthInfo: k.Context + "-user", Namespace: k.Namespace}
	cfg.CurrentContext = k.Context
	return clientcmd.WriteToFile(*cfg, path)
}

// Clientset is a client for the cluster and user of a kubeconfig file.
func Clientset(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
