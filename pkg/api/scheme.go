// Package api holds the scheme and codecs: the Go types kube-lite serves and
// how they are encoded on the wire and in storage.
package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Scheme knows every built-in type that the server or its clients encode.
type Scheme struct {
	*runtime.Scheme
	Codecs         serializer.CodecFactory
	ParameterCodec runtime.ParameterCodec
}

// NewScheme builds a scheme with all built-in Kubernetes API groups registered.
func NewScheme() *Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // the registration functions are static; failure is a programming error
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return &Scheme{
		Scheme:         s,
		Codecs:         serializer.NewCodecFactory(s, serializer.EnableStrict),
		ParameterCodec: runtime.NewParameterCodec(s),
	}
}
