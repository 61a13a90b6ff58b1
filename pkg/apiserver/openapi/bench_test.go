package openapi_test

import (
	"testing"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/openapi"
)

// BenchmarkBuild measures a cold build of every document, as on the first
// request after the apiserver starts.
func BenchmarkBuild(b *testing.B) {
	scheme := api.NewScheme()
	for b.Loop() {
		o := openapi.NewBuilder(testResources(), scheme)
		o.V3Discovery()
		o.V2()
		if _, _, err := o.V2Protobuf(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildV3(b *testing.B) {
	scheme := api.NewScheme()
	for b.Loop() {
		openapi.NewBuilder(testResources(), scheme).V3Discovery()
	}
}
