package apiserver

import (
	"net/http"
	"strings"

	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/openapi"
)

func serveOpenAPIv2(b *openapi.Builder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "application/com.github.proto-openapi.spec.v2") {
			body, etag, err := b.V2Protobuf()
			if err == nil {
				serveDoc(w, r, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", body, etag)
				return
			}
		}
		body, etag := b.V2()
		serveDoc(w, r, "application/json", body, etag)
	}
}

func serveOpenAPIv3Root(b *openapi.Builder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, b.V3Discovery())
	}
}

func serveOpenAPIv3(b *openapi.Builder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
		body, etag, ok := b.V3(path)
		if !ok {
			handler.WriteError(w, r, notFoundError())
			return
		}
		serveDoc(w, r, "application/json", body, etag)
	}
}

// serveDoc answers with the document, or 304 when the client has it.
func serveDoc(w http.ResponseWriter, r *http.Request, contentType string, body []byte, etag string) {
	if etag != "" {
		quoted := `"` + etag + `"`
		w.Header().Set("Etag", quoted)
		if r.Header.Get("If-None-Match") == quoted {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	_, _ = w.Write(body)
}
