// Package api holds the scheme and codecs: the Go types kube-lite serves and
// how they are encoded on the wire and in storage.
package api

import (
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// groupVersions are the API group versions the server serves, or sends and
// receives (reviews to webhooks, scale, eviction). Only these are linked and
// registered: client-go's scheme would register every group of every
// version at init, most of a binary's start-up work and resident pages.
var groupVersions = []func(*runtime.Scheme) error{
	corev1.AddToScheme,
	appsv1.AddToScheme,
	batchv1.AddToScheme,
	coordinationv1.AddToScheme,
	discoveryv1.AddToScheme,
	rbacv1.AddToScheme,
	schedulingv1.AddToScheme,
	autoscalingv1.AddToScheme,
	policyv1.AddToScheme,
	authenticationv1.AddToScheme,
	authorizationv1.AddToScheme,
	admissionregistrationv1.AddToScheme,
	admissionv1.AddToScheme,
}

// Scheme knows every built-in type that the server or its clients encode.
type Scheme struct {
	*runtime.Scheme
	Codecs         serializer.CodecFactory
	ParameterCodec runtime.ParameterCodec
}

// NewScheme builds a scheme with the built-in API groups kube-lite serves.
func NewScheme() *Scheme {
	s := runtime.NewScheme()
	for _, add := range groupVersions {
		if err := add(s); err != nil {
			panic(err) // the registration functions are static; failure is a programming error
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return &Scheme{
		Scheme:         s,
		Codecs:         serializer.NewCodecFactory(s, serializer.EnableStrict),
		ParameterCodec: runtime.NewParameterCodec(s),
	}
}
