// Package controllertest holds what the controllers' unit tests share: a fake
// clientset that behaves a little more like the apiserver.
package controllertest

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// NewClientset is fake.NewClientset that also fills in generateName and a
// UID on create, as the apiserver does; the plain fake stores "" names.
func NewClientset(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || ca.GetSubresource() != "" {
			return false, nil, nil
		}
		m, err := meta.Accessor(ca.GetObject())
		if err != nil {
			return false, nil, nil
		}
		i := n.Add(1)
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), i))
		}
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
		}
		return false, nil, nil
	})
	return c
}

// Writes returns the verbs and resources of the writes made through c, e.g.
// "create pods", for assertions about what a controller did.
func Writes(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		r := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			r += "/" + s
		}
		out = append(out, a.GetVerb()+" "+r)
	}
	return out
}
