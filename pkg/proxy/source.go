package proxy

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Sources lists and watches what the proxy follows. They are REST clients
// of the two API groups it reads, on a scheme holding only those: client-go's
// typed Clientset would link and register every API group, 8 MiB of a
// node daemon's resident memory for types it never decodes.
func Sources(cfg *rest.Config) (services, slices cache.ListerWatcher, err error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1.AddToScheme, discoveryv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, nil, fmt.Errorf("scheme: %w", err)
		}
	}
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	client := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion, c.NegotiatedSerializer = apiPath, &gv, codecs
		if c.ContentType == "" && c.AcceptContentTypes == "" {
			// As client-go's generated clients ask for built-in types:
			// protobuf decodes a thousand slices several times faster than
			// JSON, with less garbage.
			c.ContentType = runtime.ContentTypeProtobuf
			c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", gv, err)
		}
		return rc, nil
	}
	core, err := client("/api", v1.SchemeGroupVersion)
	if err != nil {
		return nil, nil, err
	}
	discovery, err := client("/apis", discoveryv1.SchemeGroupVersion)
	if err != nil {
		return nil, nil, err
	}
	return cache.NewListWatchFromClient(core, "services", metav1.NamespaceAll, fields.Everything()),
		cache.NewListWatchFromClient(discovery, "endpointslices", metav1.NamespaceAll, fields.Everything()), nil
}
