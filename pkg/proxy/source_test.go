package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// The sources list Services and EndpointSlices at the API's paths, asking
// for protobuf first, and decode what the apiserver answers in it.
func TestSourcesListInProtobuf(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := discoveryv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	lists := map[string]runtime.Object{
		"/api/v1/services": &v1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "5"},
			Items: []v1.Service{*service("web", "10.96.0.20", nil)}},
		"/apis/discovery.k8s.io/v1/endpointslices": &discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "5"},
			Items: []discoveryv1.EndpointSlice{*slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode))}},
	}
	accepts := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, ok := lists[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		accepts[r.URL.Path] = r.Header.Get("Accept")
		gv := v1.SchemeGroupVersion
		if _, ok := list.(*discoveryv1.EndpointSliceList); ok {
			gv = discoveryv1.SchemeGroupVersion
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		if err := codecs.EncoderForVersion(info.Serializer, gv).Encode(list, w); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()

	services, slices, err := Sources(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := services.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list services: %v", err)
	}
	if l, ok := obj.(*v1.ServiceList); !ok || len(l.Items) != 1 || l.Items[0].Spec.ClusterIP != "10.96.0.20" {
		t.Errorf("services: %#v", obj)
	}
	obj, err = slices.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list endpointslices: %v", err)
	}
	if l, ok := obj.(*discoveryv1.EndpointSliceList); !ok || len(l.Items) != 1 || l.Items[0].Endpoints[0].Addresses[0] != "10.244.0.5" {
		t.Errorf("endpointslices: %#v", obj)
	}
	for path, accept := range accepts {
		if !strings.HasPrefix(accept, runtime.ContentTypeProtobuf) {
			t.Errorf("%s asked for %q, want protobuf first", path, accept)
		}
	}
	if len(accepts) != 2 {
		t.Errorf("asked %v, want both lists", accepts)
	}
}
