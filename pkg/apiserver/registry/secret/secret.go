// Package secret holds the Secret strategy: type defaulting, stringData
// folding, per-type required keys, size limits, immutability, the table and
// the type field selector.
package secret

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes secrets; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	docs := corev1.Secret{}.SwaggerDoc()
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "secrets",
		Singular:     "secret",
		Kind:         "Secret",
		Namespaced:   true,
		New:          func() runtime.Object { return &corev1.Secret{} },
		NewList:      func() runtime.Object { return &corev1.SecretList{} },
		Strategy:     strategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.Column("Type", "string", 0, docs["type"]),
			tableutil.Column("Data", "string", 0, docs["data"]),
			tableutil.AgeColumn(),
		}, func(s *corev1.Secret) []interface{} {
			return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), tableutil.Age(s.CreationTimestamp, c.Now())}
		}),
		Attrs: Attrs,
	}
}

// Attrs exposes type to field selectors.
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, nil, fmt.Errorf("not a secret: %T", obj)
	}
	return labels.Set(s.Labels), fields.Set{
		"metadata.name":      s.Name,
		"metadata.namespace": s.Namespace,
		"type":               string(s.Type),
	}, nil
}

type strategy struct{}

// Default sets type Opaque and folds stringData into data: stringData is
// write-only, as upstream, where it never reaches storage.
func (strategy) Default(obj runtime.Object) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return registry.WrongType("secret", obj)
	}
	return Validate(s)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	s, ok1 := obj.(*corev1.Secret)
	oldS, ok2 := old.(*corev1.Secret)
	if !ok1 || !ok2 {
		return registry.WrongType("secret", obj)
	}
	errs := Validate(s)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Type, oldS.Type, field.NewPath("type"))...)
	return append(errs, validation.FrozenData(s.Immutable, oldS.Immutable,
		validation.DataChange{Field: "data", New: s.Data, Old: oldS.Data},
	)...)
}

// Validate checks keys, size and the keys each well-known type requires.
func Validate(s *corev1.Secret) field.ErrorList {
	dataPath := field.NewPath("data")
	errs := validation.DataKeys(s.Data, dataPath)
	size := 0
	for _, v := range s.Data {
		size += len(v)
	}
	if size > validation.MaxDataSize {
		errs = append(errs, field.TooLong(dataPath, "", validation.MaxDataSize))
	}
	require := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	requireJSON := func(key string) {
		v, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		var m map[string]interface{}
		if err := json.Unmarshal(v, &m); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		require(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeTLS:
		require(corev1.TLSCertKey)
		require(corev1.TLSPrivateKeyKey)
	}
	return errs
}
