package component

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig loads a kubeconfig the way kubectl resolves one: the explicit
// path, else $KUBECONFIG, else ~/.kube/config; with none, the in-cluster config.
func RESTConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.UserAgent = userAgent
	// Daemons issue bursts (informer lists, bindings); the client-side
	// limiter's defaults (5 qps) would throttle them far below the server.
	if cfg.QPS == 0 {
		cfg.QPS = 500
		cfg.Burst = 1000
	}
	return cfg, nil
}
