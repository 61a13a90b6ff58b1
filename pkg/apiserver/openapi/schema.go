package openapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// jsonSchema is one schema as both OpenAPI versions spell it; the generator
// fills only what the target version allows (oneOf and allOf are v3 only).
type jsonSchema struct {
	Ref                  string                 `json:"$ref,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Default              json.RawMessage        `json:"default,omitempty"`
	Type                 string                 `json:"type,omitempty"`
	Format               string                 `json:"format,omitempty"`
	Enum                 []string               `json:"enum,omitempty"`
	AllOf                []*jsonSchema          `json:"allOf,omitempty"`
	OneOf                []*jsonSchema          `json:"oneOf,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	AdditionalProperties *jsonSchema            `json:"additionalProperties,omitempty"`
	Required             []string               `json:"required,omitempty"`

	PatchMergeKey string     `json:"x-kubernetes-patch-merge-key,omitempty"`
	PatchStrategy string     `json:"x-kubernetes-patch-strategy,omitempty"`
	ListType      string     `json:"x-kubernetes-list-type,omitempty"`
	ListMapKeys   []string   `json:"x-kubernetes-list-map-keys,omitempty"`
	MapType       string     `json:"x-kubernetes-map-type,omitempty"`
	GVK           []gvkValue `json:"x-kubernetes-group-version-kind,omitempty"`
}

// gvkValue is the spelling of a GroupVersionKind in the
// x-kubernetes-group-version-kind extension.
type gvkValue struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

func toGVKValue(gvk schema.GroupVersionKind) gvkValue {
	return gvkValue{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}

// The interfaces below are how apimachinery's special types (Time,
// Quantity, IntOrString, Duration...) tell OpenAPI generators that their
// wire form is not their Go shape; upstream's openapi-gen reads the same
// methods, so honouring them yields the upstream schemas.
type openAPISchemaTyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

type openAPIV3OneOfTyper interface {
	OpenAPIV3OneOfTypes() []string
}

type swaggerDocer interface {
	SwaggerDoc() map[string]string
}

// schemaGen turns Go types into component schemas for one document. It
// collects only the definitions reachable from the types asked for, as
// upstream does per group version.
type schemaGen struct {
	v3        bool
	refPrefix string
	defs      map[string]*jsonSchema
}

func newSchemaGen(v3 bool) *schemaGen {
	prefix := "#/definitions/"
	if v3 {
		prefix = "#/components/schemas/"
	}
	return &schemaGen{v3: v3, refPrefix: prefix, defs: map[string]*jsonSchema{}}
}

// definitionName is the upstream name of a Go type: the package path with its
// leading domain reversed (k8s.io/api/core/v1 → io.k8s.api.core.v1), then
// the type name.
func definitionName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	if len(parts) > 0 {
		domain := strings.Split(parts[0], ".")
		for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
			domain[i], domain[j] = domain[j], domain[i]
		}
		parts[0] = strings.Join(domain, ".")
	}
	return strings.Join(parts, ".") + "." + t.Name()
}

// define makes sure t has a component schema and returns its name.
func (g *schemaGen) define(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := definitionName(t)
	if _, ok := g.defs[name]; ok {
		return name
	}
	// Reserve the name before descending so that recursive types
	// (JSONSchemaProps-like) terminate.
	s := &jsonSchema{}
	g.defs[name] = s
	*s = *g.namedSchema(t)
	return name
}

// addGVK records that the component for t is the top-level kind gvk.
func (g *schemaGen) addGVK(t reflect.Type, gvk schema.GroupVersionKind) string {
	name := g.define(t)
	s := g.defs[name]
	v := toGVKValue(gvk)
	for _, have := range s.GVK {
		if have == v {
			return name
		}
	}
	s.GVK = append(s.GVK, v)
	sort.Slice(s.GVK, func(i, j int) bool {
		a, b := s.GVK[i], s.GVK[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	return name
}

func (g *schemaGen) ref(name string) *jsonSchema {
	return &jsonSchema{Ref: g.refPrefix + name}
}

// namedSchema is the component schema of a named type.
func (g *schemaGen) namedSchema(t reflect.Type) *jsonSchema {
	docs := swaggerDoc(t)
	if docs == nil {
		docs = map[string]string{"": typeDoc(definitionName(t))}
	}
	if types, format, ok := specialTypes(t); ok {
		s := &jsonSchema{Description: docs[""], Format: format}
		if oneOf, ok := v3OneOf(t); ok && g.v3 {
			for _, typ := range oneOf {
				s.OneOf = append(s.OneOf, &jsonSchema{Type: typ})
			}
		} else if len(types) > 0 {
			s.Type = types[0]
		}
		return s
	}
	if t.Kind() == reflect.Struct && implementsEither(t, reflect.TypeFor[json.Marshaler]()) {
		// RawExtension, FieldsV1: free-form JSON that Go carries as bytes.
		return &jsonSchema{Description: docs[""], Type: "object"}
	}
	if t.Kind() != reflect.Struct {
		s := g.inlineSchema(t)
		s.Description = docs[""]
		return s
	}
	s := &jsonSchema{Description: docs[""], Type: "object", Properties: map[string]*jsonSchema{}}
	if atomicType(definitionName(t)) {
		s.MapType = "atomic"
	}
	g.addFields(s, t, docs)
	if len(s.Properties) == 0 {
		s.Properties = nil
	}
	sort.Strings(s.Required)
	return s
}

// addFields adds t's JSON fields to s, flattening embedded structs as
// encoding/json does.
func (g *schemaGen) addFields(s *jsonSchema, t reflect.Type, docs map[string]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				g.addFields(s, et, swaggerDoc(et))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := g.propertySchema(f.Type, docs[name])
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			p.PatchStrategy = ps
		}
		if mk := f.Tag.Get("patchMergeKey"); mk != "" {
			p.PatchMergeKey = mk
		}
		markers, _ := commentMarkers(definitionName(t) + "." + name)
		p.ListType, p.ListMapKeys, p.MapType = markers.listType, markers.listMapKeys, markers.mapType
		if markers.defaultValue != "" {
			p.Default = json.RawMessage(markers.defaultValue)
		}
		s.Properties[name] = p
		if isRequired(markers, opts) {
			s.Required = append(s.Required, name)
		}
	}
}

// propertySchema is the schema of a field: a reference for named types (with
// the field's description beside it, in the form each version accepts) or an
// inline schema.
func (g *schemaGen) propertySchema(t reflect.Type, description string) *jsonSchema {
	s := g.inlineSchema(t)
	if description == "" {
		return s
	}
	if s.Ref != "" && g.v3 {
		// OpenAPI 3.0 ignores siblings of $ref; upstream wraps it in allOf.
		return &jsonSchema{Description: description, AllOf: []*jsonSchema{s}}
	}
	s.Description = description
	return s
}

// inlineSchema is the schema used where a value of type t appears.
func (g *schemaGen) inlineSchema(t reflect.Type) *jsonSchema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isDefinition(t) {
		return g.ref(g.define(t))
	}
	switch t.Kind() {
	case reflect.String:
		s := &jsonSchema{Type: "string"}
		if t.Name() != "" && t.PkgPath() != "" {
			s.Enum = enumValues(definitionName(t))
		}
		return s
	case reflect.Bool:
		return &jsonSchema{Type: "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return &jsonSchema{Type: "integer", Format: "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return &jsonSchema{Type: "integer", Format: "int64"}
	case reflect.Float32:
		return &jsonSchema{Type: "number", Format: "float"}
	case reflect.Float64:
		return &jsonSchema{Type: "number", Format: "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &jsonSchema{Type: "string", Format: "byte"}
		}
		return &jsonSchema{Type: "array", Items: g.inlineSchema(t.Elem())}
	case reflect.Map:
		return &jsonSchema{Type: "object", AdditionalProperties: g.inlineSchema(t.Elem())}
	case reflect.Struct:
		// An anonymous struct: describe it in place.
		s := &jsonSchema{Type: "object", Properties: map[string]*jsonSchema{}}
		g.addFields(s, t, nil)
		return s
	default:
		// interface{} and the like: any JSON value.
		return &jsonSchema{}
	}
}

// isDefinition reports whether t gets its own component: named structs and
// the special named types that describe their own wire form.
func isDefinition(t reflect.Type) bool {
	if t.Name() == "" || t.PkgPath() == "" {
		return false
	}
	if t.Kind() == reflect.Struct {
		return true
	}
	_, _, special := specialTypes(t)
	return special
}

func specialTypes(t reflect.Type) ([]string, string, bool) {
	v, ok := valueImplementing(t, reflect.TypeFor[openAPISchemaTyper]())
	if !ok {
		return nil, "", false
	}
	typer := v.(openAPISchemaTyper)
	return typer.OpenAPISchemaType(), typer.OpenAPISchemaFormat(), true
}

func v3OneOf(t reflect.Type) ([]string, bool) {
	v, ok := valueImplementing(t, reflect.TypeFor[openAPIV3OneOfTyper]())
	if !ok {
		return nil, false
	}
	types := v.(openAPIV3OneOfTyper).OpenAPIV3OneOfTypes()
	return types, len(types) > 0
}

func swaggerDoc(t reflect.Type) map[string]string {
	v, ok := valueImplementing(t, reflect.TypeFor[swaggerDocer]())
	if !ok {
		return nil
	}
	return v.(swaggerDocer).SwaggerDoc()
}

// valueImplementing returns a zero value of t (or *t) that implements iface.
func valueImplementing(t reflect.Type, iface reflect.Type) (any, bool) {
	if t.Implements(iface) {
		return reflect.Zero(t).Interface(), true
	}
	if reflect.PointerTo(t).Implements(iface) {
		return reflect.New(t).Interface(), true
	}
	return nil, false
}

func implementsEither(t reflect.Type, iface reflect.Type) bool {
	return t.Implements(iface) || reflect.PointerTo(t).Implements(iface)
}
