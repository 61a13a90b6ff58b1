package openapi_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/openapi"
)

func TestHandlers(t *testing.T) {
	b := openapi.NewBuilder(testResources(), api.NewScheme())
	_, etag, _ := b.V3("api/v1")
	_, v2etag := b.V2()
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi/v3", b.ServeV3Discovery)
	mux.HandleFunc("/openapi/v3/", b.ServeV3)
	mux.HandleFunc("/openapi/v2", b.ServeV2)

	tests := []struct {
		name, url      string
		header         map[string]string
		wantCode       int
		wantHeader     map[string]string
		wantV2Protobuf bool
	}{
		{name: "root", url: "/openapi/v3", wantCode: 200, wantHeader: map[string]string{"Content-Type": "application/json"}},
		{name: "current hash is immutable", url: "/openapi/v3/api/v1?hash=" + etag, wantCode: 200,
			wantHeader: map[string]string{"Cache-Control": "public, immutable", "ETag": strconv.Quote(etag)}},
		{name: "stale hash redirects", url: "/openapi/v3/api/v1?hash=0BAD", wantCode: 301,
			wantHeader: map[string]string{"Location": "/openapi/v3/api/v1?hash=" + etag}},
		{name: "no hash is not cached forever", url: "/openapi/v3/apis/apps/v1", wantCode: 200, wantHeader: map[string]string{"Cache-Control": ""}},
		{name: "revalidation", url: "/openapi/v3/api/v1", header: map[string]string{"If-None-Match": strconv.Quote(etag)}, wantCode: 304},
		{name: "unknown group version", url: "/openapi/v3/apis/batch/v1", wantCode: 404},
		{name: "v3 protobuf not offered", url: "/openapi/v3/api/v1", header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"}, wantCode: 406},
		{name: "v2 json", url: "/openapi/v2", header: map[string]string{"Accept": "application/json"}, wantCode: 200,
			wantHeader: map[string]string{"Content-Type": "application/json", "ETag": strconv.Quote(v2etag)}},
		{name: "v2 protobuf as kubectl asks", url: "/openapi/v2", header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}, wantCode: 200,
			wantHeader: map[string]string{"Content-Type": openapi.ContentTypeV2Protobuf}, wantV2Protobuf: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.url, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("status = %d, want %d", rec.Code, tt.wantCode)
			}
			for k, v := range tt.wantHeader {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tt.wantV2Protobuf {
				var doc openapi_v2.Document
				if err := proto.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
					t.Fatalf("body is not an openapi v2 protobuf document: %v", err)
				}
				if doc.GetSwagger() != "2.0" || len(doc.GetDefinitions().GetAdditionalProperties()) == 0 {
					t.Errorf("protobuf document: swagger %q with %d definitions", doc.GetSwagger(), len(doc.GetDefinitions().GetAdditionalProperties()))
				}
			}
		})
	}
}
