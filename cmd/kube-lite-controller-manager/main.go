// Command kube-lite-controller-manager runs the controllers that turn
// Deployments, Jobs, Nodes and Namespaces into the state they ask for.
package main

import (
	"github.com/kube-lite/kube-lite/pkg/component"
	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

func main() { component.Main("kube-lite-controller-manager", manager.NewOptions()) }
