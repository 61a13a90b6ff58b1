package pki

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ClusterName is the cluster and context name in every kubeconfig written here.
const ClusterName = "kube-lite"

// Kubeconfig is what a self-contained kubeconfig needs: everything is embedded
// so that the file can be copied to another machine alone.
type Kubeconfig struct {
	ServerURL     string
	CAPEM         []byte
	User          string
	ClientCertPEM []byte
	ClientKeyPEM  []byte
}

// Config returns kc as a client-go kubeconfig with cluster and context
// "kube-lite" and the current context set.
func (kc Kubeconfig) Config() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = kc.ServerURL
	cluster.CertificateAuthorityData = kc.CAPEM
	cfg.Clusters[ClusterName] = cluster

	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData = kc.ClientCertPEM
	user.ClientKeyData = kc.ClientKeyPEM
	cfg.AuthInfos[kc.User] = user

	ctx := clientcmdapi.NewContext()
	ctx.Cluster = ClusterName
	ctx.AuthInfo = kc.User
	cfg.Contexts[ClusterName] = ctx
	cfg.CurrentContext = ClusterName
	return cfg
}

// WriteKubeconfig writes kc to path with mode 0600 (it holds a private key).
// It serialises with clientcmd, as clientcmd.WriteToFile does, but replaces
// the file atomically and tightens the mode of an existing file, which
// WriteToFile leaves as it was. It reports whether the file changed.
func WriteKubeconfig(path string, kc Kubeconfig) (changed bool, err error) {
	if kc.ServerURL == "" || kc.User == "" {
		return false, fmt.Errorf("kubeconfig %s: server URL and user are required", path)
	}
	data, err := clientcmd.Write(*kc.Config())
	if err != nil {
		return false, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	changed, err = writeIfChanged(path, data, privateMode)
	if err != nil {
		return false, fmt.Errorf("kubeconfig: %w", err)
	}
	return changed, nil
}
