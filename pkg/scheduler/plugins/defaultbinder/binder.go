// Package defaultbinder binds a pod by POSTing a Binding to pods/<name>/binding.
package defaultbinder

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "DefaultBinder"

// Plugin implements Bind.
type Plugin struct {
	client kubernetes.Interface
}

// Factory returns a factory bound to client.
func Factory(client kubernetes.Interface) framework.PluginFactory {
	return func(framework.Handle) (framework.Plugin, error) { return &Plugin{client: client}, nil }
}

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// Bind implements framework.BindPlugin.
func (p *Plugin) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := p.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(err)
	}
	return nil
}
