// Package openapi publishes the OpenAPI documents of the served resources:
// /openapi/v3 (the discovery root and one document per group version) and
// /openapi/v2. kubectl reads them to decide whether the server validates
// fields itself (the fieldValidation query parameter on PATCH), to compute
// strategic merge patches for apply, and for explain. Schemas come from the
// Go types of k8s.io/api by reflection, named and shaped as upstream
// publishes them.
package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// Content types the routes serve. kubectl asks for the v3 documents as JSON
// and for v2 as protobuf (client-go's discovery OpenAPISchema), under the
// old name with "@" that Go's mime parser rejects in a response; upstream
// answers with the dotted name, and so do we.
const (
	ContentTypeJSON       = "application/json"
	ContentTypeV2Protobuf = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// Builder generates the documents on first use and then serves the cached
// bytes; it is safe for concurrent use.
type Builder struct {
	resources []*registry.Resource
	scheme    *api.Scheme

	v3Once      sync.Once
	v3Docs      map[string]document // by group version path: api/v1, apis/apps/v1
	v3Discovery []byte

	v2Once sync.Once
	v2     document

	v2ProtoOnce sync.Once
	v2Proto     document
	v2ProtoErr  error
}

// document is one generated body and its entity tag.
type document struct {
	body []byte
	etag string
}

func newDocument(body []byte) document {
	// Upstream's hash: SHA-512 in upper-case hex. It is both the ?hash= of
	// v3 URLs and, quoted, the entity tag.
	return document{body: body, etag: fmt.Sprintf("%X", sha512.Sum512(body))}
}

// NewBuilder returns a Builder for resources; scheme resolves the Go types of
// subresource kinds (Scale, Binding, Eviction).
func NewBuilder(resources []*registry.Resource, scheme *api.Scheme) *Builder {
	return &Builder{resources: resources, scheme: scheme}
}

// V3Discovery is the body of GET /openapi/v3: every group version document
// with a URL whose hash changes whenever the document does, so that clients
// may cache the documents forever.
func (b *Builder) V3Discovery() []byte {
	b.buildV3()
	return b.v3Discovery
}

// V3 returns the document of one group version (the path after
// /openapi/v3/: "api/v1", "apis/apps/v1") and its entity tag, unquoted (the
// same value as the ?hash= in V3Discovery); ok is false when no served
// resource belongs to that group version. Serve it with that ETag and, when
// the request's ?hash= matches, as immutable (see ServeV3).
func (b *Builder) V3(groupVersionPath string) (body []byte, etag string, ok bool) {
	b.buildV3()
	d, ok := b.v3Docs[groupVersionPath]
	return d.body, d.etag, ok
}

// V2 returns the Swagger 2.0 JSON document of all resources and its entity
// tag, unquoted.
func (b *Builder) V2() (body []byte, etag string) {
	b.buildV2()
	return b.v2.body, b.v2.etag
}

// V2Protobuf returns the v2 document as protobuf, which kubectl asks for
// (Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf) when
// it falls back from v3; answer with Content-Type ContentTypeV2Protobuf.
func (b *Builder) V2Protobuf() (body []byte, etag string, err error) {
	b.v2ProtoOnce.Do(func() {
		jsonBody, _ := b.V2()
		doc, err := openapi_v2.ParseDocument(jsonBody)
		if err != nil {
			b.v2ProtoErr = fmt.Errorf("parse generated openapi v2: %w", err)
			return
		}
		pb, err := proto.Marshal(doc)
		if err != nil {
			b.v2ProtoErr = fmt.Errorf("encode openapi v2 as protobuf: %w", err)
			return
		}
		b.v2Proto = newDocument(pb)
	})
	return b.v2Proto.body, b.v2Proto.etag, b.v2ProtoErr
}

// groupVersionPath is where a group version's document lives under
// /openapi/v3/ (and the prefix of its REST paths).
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func (b *Builder) byGroupVersion() (map[string][]*registry.Resource, []string) {
	groups := map[string][]*registry.Resource{}
	for _, r := range b.resources {
		p := groupVersionPath(r.GroupVersion)
		groups[p] = append(groups[p], r)
	}
	paths := make([]string, 0, len(groups))
	for p, rs := range groups {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return groups, paths
}

type v3Root struct {
	OpenAPI    string               `json:"openapi"`
	Info       info                 `json:"info"`
	Paths      map[string]*pathItem `json:"paths"`
	Components v3Components         `json:"components"`
}

type v3Components struct {
	Schemas map[string]*jsonSchema `json:"schemas"`
}

type info struct {
	Title   string `json:"title"`
	Version string `json:"version"`
}

type v2Root struct {
	Swagger     string                 `json:"swagger"`
	Info        info                   `json:"info"`
	Paths       map[string]*pathItem   `json:"paths"`
	Definitions map[string]*jsonSchema `json:"definitions"`
}

// docInfo is what upstream servers that do not know their own release
// publish.
func docInfo() info { return info{Title: "Kubernetes", Version: "unversioned"} }

func (b *Builder) buildV3() {
	b.v3Once.Do(func() {
		groups, gvPaths := b.byGroupVersion()
		b.v3Docs = make(map[string]document, len(groups))
		type entry struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		}
		discovery := struct {
			Paths map[string]entry `json:"paths"`
		}{Paths: map[string]entry{}}
		for _, p := range gvPaths {
			g := newSchemaGen(true)
			paths := b.paths(g, groups[p])
			body := mustMarshal(v3Root{
				OpenAPI:    "3.0.0",
				Info:       docInfo(),
				Paths:      paths,
				Components: v3Components{Schemas: g.defs},
			})
			d := newDocument(body)
			b.v3Docs[p] = d
			discovery.Paths[p] = entry{ServerRelativeURL: "/openapi/v3/" + p + "?hash=" + d.etag}
		}
		b.v3Discovery = mustMarshal(discovery)
	})
}

func (b *Builder) buildV2() {
	b.v2Once.Do(func() {
		g := newSchemaGen(false)
		groups, gvPaths := b.byGroupVersion()
		all := map[string]*pathItem{}
		for _, p := range gvPaths {
			for k, v := range b.paths(g, groups[p]) {
				all[k] = v
			}
		}
		b.v2 = newDocument(mustMarshal(v2Root{
			Swagger:     "2.0",
			Info:        docInfo(),
			Paths:       all,
			Definitions: g.defs,
		}))
	})
}

// mustMarshal encodes documents made only of strings, maps and slices, which
// cannot fail to encode.
func mustMarshal(v any) []byte {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("openapi: encode generated document: %v", err))
	}
	return body
}
