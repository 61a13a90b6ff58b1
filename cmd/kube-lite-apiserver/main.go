// Command kube-lite-apiserver serves the Kubernetes API on etcd.
package main

import (
	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/component"
)

func main() { component.Main("kube-lite-apiserver", apiserver.NewOptions()) }
