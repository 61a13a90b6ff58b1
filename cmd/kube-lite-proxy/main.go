// Command kube-lite-proxy programs a node's Services (cluster IPs and
// NodePorts) into nftables from the Services and EndpointSlices it watches.
package main

import (
	"github.com/kube-lite/kube-lite/pkg/component"
	"github.com/kube-lite/kube-lite/pkg/proxy"
)

func main() { component.Main("kube-lite-proxy", proxy.NewOptions()) }
