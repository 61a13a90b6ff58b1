// Package validate checks manifests on the client, before anything is sent,
// against the OpenAPI v3 schemas that the server publishes at /openapi/v3.
package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// Directive values of --validate.
const (
	Strict = "strict"
	Warn   = "warn"
	Ignore = "ignore"
)

// ParseDirective maps the flag value (including kubectl's legacy booleans)
// to a directive.
func ParseDirective(v string) (string, error) {
	switch strings.ToLower(v) {
	case "strict", "true", "":
		return Strict, nil
	case "warn":
		return Warn, nil
	case "ignore", "false":
		return Ignore, nil
	}
	return "", fmt.Errorf("invalid - validate option %q; must be one of: strict (or true), warn, ignore (or false)", v)
}

// SpecSource yields the OpenAPI v3 document of one group-version;
// client-go's openapi3.Root satisfies it.
type SpecSource interface {
	GVSpec(gv schema.GroupVersion) (*spec3.OpenAPI, error)
}

// Validator implements resource.ContentValidator for the Builder.
type Validator struct {
	src  SpecSource
	mode string

	mu    sync.Mutex
	specs map[schema.GroupVersion]*spec3.OpenAPI
}

// New returns a validator in the given mode.
func New(src SpecSource, mode string) *Validator {
	return &Validator{src: src, mode: mode, specs: map[schema.GroupVersion]*spec3.OpenAPI{}}
}

// ValidateBytes checks one document (YAML or JSON).
func (v *Validator) ValidateBytes(data []byte) error {
	if v.mode == Ignore {
		return nil
	}
	problems, err := v.problems(data)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	if len(problems) == 1 {
		return errors.New(problems[0])
	}
	return fmt.Errorf("[%s]", strings.Join(problems, ", "))
}

func (v *Validator) problems(data []byte) ([]string, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("error converting YAML to JSON: %w", err)
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, fmt.Errorf("the manifest is not an object: %w", err)
	}
	return v.objectProblems(obj)
}

// objectProblems checks one decoded document. As kubectl does, a kind whose
// PATCH the server documents with the fieldValidation parameter is left to
// the server (apply and create send --validate's level as that parameter):
// the server then refuses that one object, and the documents after it are
// still sent. Only what the server cannot check is checked here.
func (v *Validator) objectProblems(obj map[string]interface{}) ([]string, error) {
	if obj == nil {
		return nil, nil
	}
	gvk, problems := kindOf(obj)
	if len(problems) > 0 {
		// A document without a kind fails even with --validate=warn,
		// as with kubectl.
		return problems, nil
	}
	if v.mode == Warn {
		// As kubectl, warn checks nothing more on the client: the
		// server warns of what it finds (it is sent fieldValidation=Warn),
		// and what it cannot be asked about goes unchecked.
		return nil, nil
	}
	if items, ok := obj["items"].([]interface{}); ok && strings.HasSuffix(gvk.Kind, "List") {
		return v.listProblems(items)
	}
	if doc := v.spec(gvk.GroupVersion()); doc != nil && serverValidates(doc, gvk) {
		return nil, nil
	}
	return v.schemaProblems(obj, gvk), nil
}

// kindOf is the document's group, version and kind, or what keeps it from
// having them.
func kindOf(obj map[string]interface{}) (schema.GroupVersionKind, []string) {
	if obj == nil {
		return schema.GroupVersionKind{}, []string{"invalid object to validate"}
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	var problems []string
	if apiVersion == "" {
		problems = append(problems, "apiVersion not set")
	}
	if kind == "" {
		problems = append(problems, "kind not set")
	}
	if len(problems) > 0 {
		return schema.GroupVersionKind{}, problems
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, []string{err.Error()}
	}
	return gv.WithKind(kind), nil
}

// schemaProblems walks obj against its kind's published schema. A
// group-version or kind the server does not publish is reported by the
// RESTMapper, which names the kind and version the user wrote.
func (v *Validator) schemaProblems(obj map[string]interface{}, gvk schema.GroupVersionKind) []string {
	doc := v.spec(gvk.GroupVersion())
	if doc == nil {
		return nil
	}
	root := findKind(doc, gvk)
	if root == nil {
		return nil
	}
	w := walker{doc: doc}
	w.walk("", obj, root, 0)
	return w.problems
}

// listProblems checks each item of a List on its own, here: the server is
// never sent the List, so kubectl checks its items on the client even for
// kinds the server validates.
func (v *Validator) listProblems(items []interface{}) ([]string, error) {
	var problems []string
	for i, item := range items {
		obj, isObj := item.(map[string]interface{})
		if !isObj && item != nil {
			// Decoding it names what it is instead, as for a document.
			js, _ := json.Marshal(item)
			err := json.Unmarshal(js, &obj)
			return nil, fmt.Errorf("items[%d]: the manifest is not an object: %w", i, err)
		}
		// Already decoded with the List: checked as it is, not encoded
		// and parsed again.
		gvk, itemProblems := kindOf(obj)
		if len(itemProblems) == 0 {
			itemProblems = v.schemaProblems(obj, gvk)
		}
		for _, p := range itemProblems {
			problems = append(problems, fmt.Sprintf("items[%d]: %s", i, p))
		}
	}
	return problems, nil
}

func (v *Validator) spec(gv schema.GroupVersion) *spec3.OpenAPI {
	v.mu.Lock()
	defer v.mu.Unlock()
	if d, ok := v.specs[gv]; ok {
		return d
	}
	d, err := v.src.GVSpec(gv)
	if err != nil {
		d = nil
	}
	v.specs[gv] = d
	return d
}

// fieldValidationParam is the query parameter through which the server
// validates fields itself.
const fieldValidationParam = "fieldValidation"

// serverValidates reports whether doc's PATCH operation for gvk takes the
// fieldValidation query parameter, which is how kubectl decides to leave
// validation to the server.
func serverValidates(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) bool {
	if doc.Paths == nil {
		return false
	}
	for _, path := range doc.Paths.Paths {
		if path == nil || path.Patch == nil || !hasGVK(path.Patch.Extensions, gvk) {
			continue
		}
		for _, param := range path.Patch.Parameters {
			if param == nil {
				continue
			}
			if ref := param.Ref.String(); ref != "" && doc.Components != nil {
				if shared, ok := doc.Components.Parameters[strings.TrimPrefix(ref, "#/components/parameters/")]; ok && shared != nil {
					param = shared
				}
			}
			if param.Name == fieldValidationParam && param.In == "query" {
				return true
			}
		}
		return false
	}
	return false
}

const gvkExtension = "x-kubernetes-group-version-kind"

func findKind(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) *spec.Schema {
	if doc.Components == nil {
		return nil
	}
	for _, s := range doc.Components.Schemas {
		if hasGVK(s.Extensions, gvk) {
			return s
		}
	}
	return nil
}

// hasGVK reports whether an x-kubernetes-group-version-kind extension (a
// list on schemas, one object on operations) names gvk.
func hasGVK(ext spec.Extensions, gvk schema.GroupVersionKind) bool {
	raw, ok := ext[gvkExtension]
	if !ok {
		return false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return false
	}
	type entry struct{ Group, Version, Kind string }
	var gvks []entry
	if json.Unmarshal(b, &gvks) != nil {
		var one entry
		if json.Unmarshal(b, &one) != nil {
			return false
		}
		gvks = []entry{one}
	}
	for _, g := range gvks {
		if g.Group == gvk.Group && g.Version == gvk.Version && g.Kind == gvk.Kind {
			return true
		}
	}
	return false
}

type walker struct {
	doc      *spec3.OpenAPI
	problems []string
}

// maxDepth guards against recursive schemas (JSONSchemaProps).
const maxDepth = 64

func (w *walker) resolve(s *spec.Schema) *spec.Schema {
	for i := 0; s != nil && i < maxDepth; i++ {
		if ref := s.Ref.String(); ref != "" {
			s = w.doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
			continue
		}
		if len(s.AllOf) == 1 && len(s.Properties) == 0 && len(s.Type) == 0 {
			s = &s.AllOf[0]
			continue
		}
		return s
	}
	return s
}

func (w *walker) addf(format string, args ...interface{}) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *walker) walk(path string, val interface{}, s *spec.Schema, depth int) {
	s = w.resolve(s)
	if s == nil || val == nil || depth > maxDepth {
		return
	}
	if b, _ := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields"); b {
		return
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		alts := append(append([]spec.Schema{}, s.OneOf...), s.AnyOf...)
		for i := range alts {
			if typeMatches(w.resolve(&alts[i]), val) {
				return
			}
		}
		w.addf("%s: invalid type %s", display(path), jsonType(val))
		return
	}
	if !typeMatches(s, val) {
		w.addf("%s: expected %s, got %s", display(path), strings.Join(s.Type, " or "), jsonType(val))
		return
	}
	switch t := val.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := joinField(path, k)
			if p, ok := s.Properties[k]; ok {
				w.walk(child, t[k], &p, depth+1)
				continue
			}
			if ap := s.AdditionalProperties; ap != nil {
				if ap.Schema != nil {
					w.walk(child, t[k], ap.Schema, depth+1)
				}
				if ap.Schema != nil || ap.Allows {
					continue
				}
			}
			if len(s.Properties) == 0 && s.AdditionalProperties == nil {
				// An object schema with no declared fields is free-form.
				continue
			}
			w.addf("unknown field %q", child)
		}
	case []interface{}:
		if s.Items == nil || s.Items.Schema == nil {
			return
		}
		for i, item := range t {
			w.walk(fmt.Sprintf("%s[%d]", path, i), item, s.Items.Schema, depth+1)
		}
	}
}

func typeMatches(s *spec.Schema, val interface{}) bool {
	if s == nil || len(s.Type) == 0 {
		return true
	}
	for _, typ := range s.Type {
		switch typ {
		case "object":
			if _, ok := val.(map[string]interface{}); ok {
				return true
			}
		case "array":
			if _, ok := val.([]interface{}); ok {
				return true
			}
		case "string":
			if _, ok := val.(string); ok {
				return true
			}
		case "boolean":
			if _, ok := val.(bool); ok {
				return true
			}
		case "number":
			if _, ok := val.(float64); ok {
				return true
			}
		case "integer":
			if f, ok := val.(float64); ok && f == math.Trunc(f) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func jsonType(val interface{}) string {
	switch val.(type) {
	case map[string]interface{}:
		return "object"
	case []interface{}:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	}
	return fmt.Sprintf("%T", val)
}

func joinField(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func display(path string) string {
	if path == "" {
		return "<root>"
	}
	return path
}
