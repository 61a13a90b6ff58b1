// Package configmap holds the ConfigMap strategy: key and size validation,
// immutability of immutable ConfigMaps, and the table.
package configmap

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes configmaps; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "configmaps",
		Singular:     "configmap",
		Kind:         "ConfigMap",
		Namespaced:   true,
		ShortNames:   []string{"cm"},
		New:          func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:      func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy:     strategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.Column("Data", "string", 0, corev1.ConfigMap{}.SwaggerDoc()["data"]),
			tableutil.AgeColumn(),
		}, func(cm *corev1.ConfigMap) []interface{} {
			return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), tableutil.Age(cm.CreationTimestamp, c.Now())}
		}),
	}
}

type strategy struct{}

func (strategy) Default(runtime.Object)                                           {}
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return registry.WrongType("configmap", obj)
	}
	return Validate(cm)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	cm, ok1 := obj.(*corev1.ConfigMap)
	oldCM, ok2 := old.(*corev1.ConfigMap)
	if !ok1 || !ok2 {
		return registry.WrongType("configmap", obj)
	}
	return append(Validate(cm), validation.FrozenData(cm.Immutable, oldCM.Immutable,
		validation.DataChange{Field: "data", New: cm.Data, Old: oldCM.Data},
		validation.DataChange{Field: "binaryData", New: cm.BinaryData, Old: oldCM.BinaryData},
	)...)
}

// Validate checks keys, that no key is in both maps, and the total size.
func Validate(cm *corev1.ConfigMap) field.ErrorList {
	dataPath := field.NewPath("data")
	errs := validation.DataKeys(cm.Data, dataPath)
	errs = append(errs, validation.DataKeys(cm.BinaryData, field.NewPath("binaryData"))...)
	size := 0
	for k, v := range cm.Data {
		size += len(v)
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, "duplicate of key present in binaryData"))
		}
	}
	for _, v := range cm.BinaryData {
		size += len(v)
	}
	if size > validation.MaxDataSize {
		// An empty path: the error is about the whole object.
		errs = append(errs, field.TooLong(field.NewPath(""), "", validation.MaxDataSize))
	}
	return errs
}
