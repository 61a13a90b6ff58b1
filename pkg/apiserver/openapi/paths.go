package openapi

import (
	"reflect"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// pathItem and the types below hold both spellings: v2 puts bodies among
// the parameters and declares consumes/produces, v3 has requestBody and
// per-media-type content.
type pathItem struct {
	Get        *operation   `json:"get,omitempty"`
	Put        *operation   `json:"put,omitempty"`
	Post       *operation   `json:"post,omitempty"`
	Delete     *operation   `json:"delete,omitempty"`
	Patch      *operation   `json:"patch,omitempty"`
	Parameters []*parameter `json:"parameters,omitempty"`
}

type operation struct {
	Description string               `json:"description,omitempty"`
	OperationID string               `json:"operationId"`
	Tags        []string             `json:"tags,omitempty"`
	Consumes    []string             `json:"consumes,omitempty"`
	Produces    []string             `json:"produces,omitempty"`
	Schemes     []string             `json:"schemes,omitempty"`
	Parameters  []*parameter         `json:"parameters,omitempty"`
	RequestBody *requestBody         `json:"requestBody,omitempty"`
	Responses   map[string]*response `json:"responses"`
	Action      string               `json:"x-kubernetes-action"`
	GVK         *gvkValue            `json:"x-kubernetes-group-version-kind,omitempty"`
}

type parameter struct {
	Name        string      `json:"name"`
	In          string      `json:"in"`
	Description string      `json:"description,omitempty"`
	Required    bool        `json:"required,omitempty"`
	Schema      *jsonSchema `json:"schema,omitempty"`
	Type        string      `json:"type,omitempty"`
	UniqueItems bool        `json:"uniqueItems,omitempty"`
}

type requestBody struct {
	Content  map[string]*mediaType `json:"content"`
	Required bool                  `json:"required"`
}

type mediaType struct {
	Schema *jsonSchema `json:"schema"`
}

type response struct {
	Description string                `json:"description"`
	Content     map[string]*mediaType `json:"content,omitempty"`
	Schema      *jsonSchema           `json:"schema,omitempty"`
}

// Media types of request and response bodies.
const (
	mediaJSON                = "application/json"
	mediaYAML                = "application/yaml"
	mediaJSONPatch           = "application/json-patch+json"
	mediaMergePatch          = "application/merge-patch+json"
	mediaStrategicMergePatch = "application/strategic-merge-patch+json"
	mediaApplyPatch          = "application/apply-patch+yaml"
)

// patchMediaTypes are the patch formats the server takes, server-side
// apply's first, in upstream's order.
func patchMediaTypes() []string {
	return []string{mediaApplyPatch, mediaJSONPatch, mediaMergePatch, mediaStrategicMergePatch}
}

// patchParams are a PATCH's query parameters: a write's and apply's force.
func patchParams() []queryParam {
	return append(writeParams(), queryParam{"force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."})
}

// queryParam describes one query parameter; the descriptions are upstream's,
// abridged.
type queryParam struct {
	name, typ, description string
}

func paramPretty() queryParam {
	return queryParam{"pretty", "string", "If 'true', then the output is pretty printed."}
}

func writeParams() []queryParam {
	return []queryParam{
		{"dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"},
		{"fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."},
		{"fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"},
	}
}

func deleteParams() []queryParam {
	return []queryParam{
		{"dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"},
		{"gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Zero means delete immediately."},
		{"orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."},
		{"propagationPolicy", "string", "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'."},
	}
}

func listParams() []queryParam {
	return []queryParam{
		{"allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
		{"continue", "string", "The continue option should be set when retrieving more results from the server."},
		{"fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{"labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{"limit", "integer", "limit is a maximum number of responses to return for a list call."},
		{"resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{"resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."},
		{"sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."},
		{"timeoutSeconds", "integer", "Timeout for the list/watch call."},
		{"watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
	}
}

// opBuilder builds the operations of one resource in one document.
type opBuilder struct {
	g  *schemaGen
	r  *registry.Resource
	gv schema.GroupVersion
}

func (o *opBuilder) query(ps ...queryParam) []*parameter {
	out := make([]*parameter, 0, len(ps))
	for _, p := range ps {
		out = append(out, o.param(p.name, "query", p.typ, p.description, false))
	}
	return out
}

func (o *opBuilder) param(name, in, typ, description string, required bool) *parameter {
	p := &parameter{Name: name, In: in, Description: description, Required: required}
	if o.g.v3 {
		p.Schema = &jsonSchema{Type: typ}
	} else {
		p.Type = typ
		p.UniqueItems = true
	}
	return p
}

// schemaOf is a reference to t's component, or a plain string for the
// streamed text of subresources like pods/log.
func (o *opBuilder) schemaOf(t reflect.Type) *jsonSchema {
	if t == nil {
		return &jsonSchema{Type: "string"}
	}
	return o.g.ref(o.g.define(t))
}

// withBody adds a request body of type t accepted as mediaTypes.
func (o *opBuilder) withBody(op *operation, t reflect.Type, mediaTypes ...string) {
	s := o.schemaOf(t)
	if o.g.v3 {
		content := map[string]*mediaType{}
		for _, m := range mediaTypes {
			content[m] = &mediaType{Schema: s}
		}
		op.RequestBody = &requestBody{Content: content, Required: true}
		return
	}
	op.Consumes = mediaTypes
	op.Parameters = append([]*parameter{{Name: "body", In: "body", Required: true, Schema: s}}, op.Parameters...)
}

// newOp makes an operation that answers with t in each of codes.
func (o *opBuilder) newOp(id, action string, gvk schema.GroupVersionKind, t reflect.Type, codes ...string) *operation {
	produces := []string{mediaJSON, mediaYAML}
	if t == nil {
		produces = []string{"text/plain", mediaJSON}
	}
	s := o.schemaOf(t)
	op := &operation{
		OperationID: id,
		Tags:        []string{tag(o.gv)},
		Responses:   map[string]*response{"401": {Description: "Unauthorized"}},
		Action:      action,
	}
	if gvk.Kind != "" {
		v := toGVKValue(gvk)
		op.GVK = &v
	}
	for _, code := range codes {
		resp := &response{Description: statusText(code)}
		if o.g.v3 {
			resp.Content = map[string]*mediaType{}
			for _, m := range produces {
				resp.Content[m] = &mediaType{Schema: s}
			}
		} else {
			resp.Schema = s
		}
		op.Responses[code] = resp
	}
	if !o.g.v3 {
		op.Produces = produces
		op.Schemes = []string{"https"}
	}
	return op
}

func statusText(code string) string {
	switch code {
	case "200":
		return "OK"
	case "201":
		return "Created"
	case "202":
		return "Accepted"
	}
	return code
}

// paths adds the components the resources need to g and returns their path
// items, keyed by absolute path.
func (b *Builder) paths(g *schemaGen, resources []*registry.Resource) map[string]*pathItem {
	out := map[string]*pathItem{}
	for _, r := range resources {
		o := &opBuilder{g: g, r: r, gv: r.GroupVersion}
		o.addResource(b, out)
	}
	return out
}

func (o *opBuilder) addResource(b *Builder, out map[string]*pathItem) {
	r := o.r
	gvk := r.GroupVersionKind()
	kindType := objectType(r.New())
	g := o.g
	g.addGVK(kindType, gvk)
	g.addGVK(reflect.TypeFor[metav1.Status](), schema.GroupVersionKind{Version: "v1", Kind: "Status"})
	g.addGVK(reflect.TypeFor[metav1.DeleteOptions](), schema.GroupVersionKind{Version: "v1", Kind: "DeleteOptions"})
	g.addGVK(reflect.TypeFor[metav1.DeleteOptions](), o.gv.WithKind("DeleteOptions"))
	var listType reflect.Type
	if r.NewList != nil {
		listType = objectType(r.NewList())
		g.addGVK(listType, o.gv.WithKind(r.Kind+"List"))
	}
	statusType := reflect.TypeFor[metav1.Status]()

	prefix := "/" + groupVersionPath(o.gv)
	scope := ""
	nsParam := []*parameter(nil)
	if r.Namespaced {
		prefix += "/namespaces/{namespace}"
		scope = "Namespaced"
		nsParam = []*parameter{o.param("namespace", "path", "string", "object name and auth scope, such as for teams and projects", true)}
	}
	id := func(verb, suffix string) string {
		return verb + groupCamel(o.gv.Group) + versionCamel(o.gv.Version) + scope + r.Kind + suffix
	}
	nameParam := o.param("name", "path", "string", "name of the "+r.Kind, true)
	pretty := o.query(paramPretty())

	collection := &pathItem{Parameters: append(append([]*parameter{}, nsParam...), pretty...)}
	if listType != nil {
		collection.Get = o.newOp(id("list", ""), "list", gvk, listType, "200")
		collection.Get.Description = "list or watch objects of kind " + r.Kind
		collection.Get.Parameters = o.query(listParams()...)
	}
	collection.Post = o.newOp(id("create", ""), "post", gvk, kindType, "200", "201", "202")
	collection.Post.Description = "create a " + r.Kind
	collection.Post.Parameters = o.query(writeParams()...)
	o.withBody(collection.Post, kindType, "*/*")
	if !r.NoDeleteCollection {
		collection.Delete = o.newOp(id("deletecollection", ""), "deletecollection", gvk, statusType, "200")
		collection.Delete.Description = "delete collection of " + r.Kind
		collection.Delete.Parameters = o.query(append(deleteParams(), listParams()...)...)
		o.withBody(collection.Delete, reflect.TypeFor[metav1.DeleteOptions](), "*/*")
	}
	out[prefix+"/"+r.Name] = collection

	if r.Namespaced && listType != nil {
		all := &pathItem{Parameters: pretty}
		all.Get = o.newOp("list"+groupCamel(o.gv.Group)+versionCamel(o.gv.Version)+r.Kind+"ForAllNamespaces", "list", gvk, listType, "200")
		all.Get.Description = "list or watch objects of kind " + r.Kind
		all.Get.Parameters = o.query(listParams()...)
		out["/"+groupVersionPath(o.gv)+"/"+r.Name] = all
	}

	itemParams := append(append([]*parameter{nameParam}, nsParam...), pretty...)
	itemPath := prefix + "/" + r.Name + "/{name}"
	out[itemPath] = o.readWrite(id, "", gvk, kindType, itemParams)
	out[itemPath].Delete = o.newOp(id("delete", ""), "delete", gvk, kindType, "200", "202")
	out[itemPath].Delete.Description = "delete a " + r.Kind
	out[itemPath].Delete.Parameters = o.query(deleteParams()...)
	o.withBody(out[itemPath].Delete, reflect.TypeFor[metav1.DeleteOptions](), "*/*")

	if r.Status != nil {
		out[itemPath+"/status"] = o.readWrite(id, "Status", gvk, kindType, itemParams)
	}
	if r.Scale != nil {
		scaleType := reflect.TypeFor[autoscalingv1.Scale]()
		scaleGVK := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
		g.addGVK(scaleType, scaleGVK)
		out[itemPath+"/scale"] = o.readWrite(id, "Scale", scaleGVK, scaleType, itemParams)
	}
	for _, sr := range r.ExtraSubresources {
		if item := o.extraSubresource(b, id, sr, itemParams); item != nil {
			out[itemPath+"/"+sr.Name] = item
		}
	}
}

// readWrite is the get/put/patch trio of an object or of its status or scale.
// Every PATCH declares fieldValidation and the kind it patches: that pair is
// how kubectl decides that the server validates fields itself.
func (o *opBuilder) readWrite(id func(verb, suffix string) string, suffix string, gvk schema.GroupVersionKind, t reflect.Type, params []*parameter) *pathItem {
	what := o.r.Kind
	if suffix != "" {
		what = strings.ToLower(suffix) + " of the specified " + o.r.Kind
	}
	item := &pathItem{Parameters: params}
	item.Get = o.newOp(id("read", suffix), "get", gvk, t, "200")
	item.Get.Description = "read the specified " + what
	item.Put = o.newOp(id("replace", suffix), "put", gvk, t, "200", "201")
	item.Put.Description = "replace the specified " + what
	item.Put.Parameters = o.query(writeParams()...)
	o.withBody(item.Put, t, "*/*")
	item.Patch = o.newOp(id("patch", suffix), "patch", gvk, t, "200", "201")
	item.Patch.Description = "partially update the specified " + what
	item.Patch.Parameters = o.query(patchParams()...)
	o.withBody(item.Patch, reflect.TypeFor[metav1.Patch](), patchMediaTypes()...)
	return item
}

// extraSubresource describes a subresource served by its own handler
// (pods/binding, pods/log, pods/eviction) from its discovery entry.
func (o *opBuilder) extraSubresource(b *Builder, id func(verb, suffix string) string, sr registry.Subresource, params []*parameter) *pathItem {
	suffix := camel(sr.Name)
	gvk := o.r.GroupVersionKind()
	// Streaming subresources (log, and exec/attach/portforward/proxy whose
	// kinds are the *Options of their query) answer with text, not objects;
	// upstream tags them with the parent's kind.
	streaming := sr.Name == "log" || strings.HasSuffix(sr.Kind, "Options")
	var t reflect.Type // nil: a text stream
	if !streaming {
		var ok bool
		gvk, t, ok = b.subresourceKind(o.r, sr)
		if !ok {
			return nil
		}
		o.g.addGVK(t, gvk)
	}
	item := &pathItem{Parameters: params}
	for _, verb := range sr.Verbs {
		switch verb {
		case "get":
			item.Get = o.newOp(id("read", suffix), "get", gvk, t, "200")
			item.Get.Description = "read " + sr.Name + " of the specified " + o.r.Kind
			if streaming {
				item.Get.Action = "connect"
			}
			if sr.Name == "log" {
				item.Get.Parameters = o.query(logParams()...)
			}
		case "create":
			item.Post = o.newOp(id("create", suffix), "post", gvk, t, "200", "201", "202")
			item.Post.Description = "create " + sr.Name + " of a " + o.r.Kind
			if streaming {
				item.Post.Action = "connect"
			} else {
				item.Post.Parameters = o.query(writeParams()...)
				o.withBody(item.Post, t, "*/*")
			}
		case "update":
			item.Put = o.newOp(id("replace", suffix), "put", gvk, t, "200", "201")
			item.Put.Description = "replace " + sr.Name + " of the specified " + o.r.Kind
			item.Put.Parameters = o.query(writeParams()...)
			o.withBody(item.Put, t, "*/*")
		case "patch":
			item.Patch = o.newOp(id("patch", suffix), "patch", gvk, t, "200", "201")
			item.Patch.Description = "partially update " + sr.Name + " of the specified " + o.r.Kind
			item.Patch.Parameters = o.query(patchParams()...)
			o.withBody(item.Patch, reflect.TypeFor[metav1.Patch](), patchMediaTypes()...)
		}
	}
	return item
}

func logParams() []queryParam {
	return []queryParam{
		{"container", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."},
		{"follow", "boolean", "Follow the log stream of the pod. Defaults to false."},
		{"limitBytes", "integer", "If set, the number of bytes to read from the server before terminating the log output."},
		{"previous", "boolean", "Return previous terminated container logs. Defaults to false."},
		{"sinceSeconds", "integer", "A relative time in seconds before the current time from which to show logs."},
		{"tailLines", "integer", "If set, the number of lines from the end of the logs to show."},
		{"timestamps", "boolean", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output."},
	}
}

// subresourceKind finds the Go type of a subresource's kind: in the
// resource's version of the subresource's group if the scheme has it there,
// else in the group's preferred version.
func (b *Builder) subresourceKind(r *registry.Resource, sr registry.Subresource) (schema.GroupVersionKind, reflect.Type, bool) {
	versions := []string{r.GroupVersion.Version}
	for _, gv := range b.scheme.PrioritizedVersionsForGroup(sr.Group) {
		versions = append(versions, gv.Version)
	}
	for _, v := range versions {
		gvk := schema.GroupVersionKind{Group: sr.Group, Version: v, Kind: sr.Kind}
		if obj, err := b.scheme.New(gvk); err == nil {
			return gvk, objectType(obj), true
		}
	}
	return schema.GroupVersionKind{}, nil, false
}

func objectType(obj any) reflect.Type {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// groupCamel spells a group as upstream operation IDs do: "" → Core,
// rbac.authorization.k8s.io → RbacAuthorization.
func groupCamel(group string) string {
	if group == "" {
		return "Core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(camel(part))
	}
	return b.String()
}

func versionCamel(v string) string { return camel(v) }

func camel(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// tag groups operations as upstream does: core_v1, apps_v1.
func tag(gv schema.GroupVersion) string {
	g := groupCamel(gv.Group)
	return strings.ToLower(g[:1]) + g[1:] + "_" + gv.Version
}
