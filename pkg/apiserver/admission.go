package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/namespacelifecycle"
	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
)

// defaultAdmission is the built-in plugin chain, in upstream's order.
func (s *Server) defaultAdmission(ctx context.Context) (*admission.Chain, error) {
	return &admission.Chain{
		Validators: []admission.Validator{
			namespacelifecycle.New(namespaceGetter{s: s}),
		},
	}, nil
}

// namespaceGetter reads namespaces from storage for admission plugins.
type namespaceGetter struct{ s *Server }

func (g namespaceGetter) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	st, ok := g.s.Store(schema.GroupResource{Resource: "namespaces"})
	if !ok {
		return &corev1.Namespace{}, nil
	}
	ns := &corev1.Namespace{}
	if err := st.Storage.Get(ctx, st.Key("", name), ns); err != nil {
		return nil, handler.StorageError(err, schema.GroupResource{Resource: "namespaces"}, name)
	}
	return ns, nil
}
