package openapi

import (
	"bytes"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The handlers below serve the documents with upstream's HTTP semantics
// (content negotiation, ETag, and immutable caching of hashed v3 URLs) for
// whichever router mounts them.

// ServeV3Discovery serves GET /openapi/v3.
func (b *Builder) ServeV3Discovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", ContentTypeJSON)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b.V3Discovery()))
}

// ServeV3 serves GET /openapi/v3/<group version path>; the group version is
// taken from r.URL.Path. A stale ?hash= is redirected to the current one, as
// upstream does, so that a client's cache never holds a mismatched document.
func (b *Builder) ServeV3(w http.ResponseWriter, r *http.Request) {
	gv := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3/"), "/")
	body, etag, ok := b.V3(gv)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !accepts(r, "application", "json") {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != etag {
			http.Redirect(w, r, "/openapi/v3/"+gv+"?hash="+etag, http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Vary", "Accept")
		w.Header().Set("Cache-Control", "public, immutable")
	}
	w.Header().Set("Content-Type", ContentTypeJSON)
	w.Header().Set("ETag", strconv.Quote(etag))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// ServeV2 serves GET /openapi/v2 as JSON or, when asked for, protobuf.
func (b *Builder) ServeV2(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	switch {
	case accepts(r, "application", "com.github.proto-openapi.spec.v2@v1.0+protobuf"),
		accepts(r, "application", "com.github.proto-openapi.spec.v2.v1.0+protobuf"):
		body, etag, err := b.V2Protobuf()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentTypeV2Protobuf)
		w.Header().Set("ETag", strconv.Quote(etag))
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	case accepts(r, "application", "json"):
		body, etag := b.V2()
		w.Header().Set("Content-Type", ContentTypeJSON)
		w.Header().Set("ETag", strconv.Quote(etag))
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	default:
		w.WriteHeader(http.StatusNotAcceptable)
	}
}

// accepts reports whether r's Accept header (absent means anything) admits
// typ/subtype, wildcards included.
func accepts(r *http.Request, typ, subtype string) bool {
	header := r.Header.Get("Accept")
	if header == "" {
		return true
	}
	for _, clause := range strings.Split(header, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			// "@" in the old protobuf name is not a token character; compare
			// the raw text instead.
			mt, _, _ = strings.Cut(strings.TrimSpace(clause), ";")
		}
		t, st, _ := strings.Cut(strings.ToLower(mt), "/")
		if (t == typ || t == "*") && (st == subtype || st == "*") {
			return true
		}
	}
	return false
}
