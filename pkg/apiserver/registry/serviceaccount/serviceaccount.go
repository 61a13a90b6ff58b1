// Package serviceaccount holds the ServiceAccount strategy: beyond its
// metadata (validated by the handler) a service account has only
// references, so the strategy mostly renders the table.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// Resource describes serviceaccounts; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "serviceaccounts",
		Singular:     "serviceaccount",
		Kind:         "ServiceAccount",
		Namespaced:   true,
		ShortNames:   []string{"sa"},
		New:          func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList:      func() runtime.Object { return &corev1.ServiceAccountList{} },
		Strategy:     strategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.Column("Secrets", "string", 0, corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
			tableutil.AgeColumn(),
		}, func(sa *corev1.ServiceAccount) []interface{} {
			return []interface{}{sa.Name, int64(len(sa.Secrets)), tableutil.Age(sa.CreationTimestamp, c.Now())}
		}),
		// As upstream's service accounts: a DELETE answers with the object.
		ReturnDeletedObject: true,
	}
}

type strategy struct{}

func (strategy) Default(runtime.Object)                                           {}
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate has nothing to add to the handler's metadata checks: upstream
// accepts any secret references (an empty image pull secret name is only a
// warning there).
func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	if _, ok := obj.(*corev1.ServiceAccount); !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("serviceaccount strategy: unexpected object %T", obj))}
	}
	return nil
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, _ runtime.Object) field.ErrorList {
	return s.Validate(ctx, obj)
}
