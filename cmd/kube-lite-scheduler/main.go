// Command kube-lite-scheduler assigns pending pods to nodes.
package main

import (
	"github.com/kube-lite/kube-lite/pkg/component"
	"github.com/kube-lite/kube-lite/pkg/scheduler"
)

func main() { component.Main("kube-lite-scheduler", scheduler.NewOptions()) }
