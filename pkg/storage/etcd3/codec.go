package etcd3

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/kube-lite/kube-lite/pkg/api"
)

// NewStorageCodec returns the codec objects of group version gv are stored
// with: Kubernetes' protobuf envelope (what upstream keeps in etcd, several
// times faster to encode and decode than JSON), carrying the object's
// group, version and kind.
func NewStorageCodec(s *api.Scheme, gv schema.GroupVersion) runtime.Codec {
	ps := protobuf.NewSerializer(s.Scheme, s.Scheme)
	return s.Codecs.CodecForVersions(ps, ps, gv, gv)
}
