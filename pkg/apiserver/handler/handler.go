// Package handler is the one generic REST handler behind every resource:
// get, list, watch, create, update, patch, delete and deletecollection, and
// the status, scale, binding, log and finalize subresources. What differs
// per resource comes from its registry.Resource.
package handler

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// Store is a served resource and the storage behind it.
type Store struct {
	*registry.Resource
	Storage storage.Interface
	// Prefix is the storage key prefix, ending in "/".
	Prefix string
}

// Key returns the storage key of one object.
func (s *Store) Key(namespace, name string) string {
	if s.Namespaced {
		return s.Prefix + namespace + "/" + name
	}
	return s.Prefix + name
}

// collectionKey is the prefix under which a namespace's (or all) objects live.
func (s *Store) collectionKey(namespace string) string {
	if s.Namespaced && namespace != "" {
		return s.Prefix + namespace + "/"
	}
	return s.Prefix
}

func (s *Store) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: s.GroupVersion.Group, Resource: s.Name}
}

// LogStreamer opens a container's log stream on the node running the pod.
type LogStreamer interface {
	// StreamLogs copies the logs of container in pod (already bound to a
	// node) to w, following them while follow is set.
	StreamLogs(r *http.Request, w http.ResponseWriter, nodeName, namespace, pod, container string) error
}

// Config is what the handler needs.
type Config struct {
	Scheme    *api.Scheme
	Clock     clock.Clock
	Stores    []*Store
	Admission *admission.Chain
	// Logs serves pods/log; nil answers 503.
	Logs LogStreamer
	// Fields keeps managedFields and serves server-side apply; nil keeps
	// none and refuses apply.
	Fields *fieldmanager.Managers
	// Rand returns a random number in [0,n); it picks the characters of
	// generated names (tests force collisions with it). Nil uses
	// math/rand/v2.
	Rand func(n int) int
}

// Handler serves resource requests.
type Handler struct {
	scheme    *api.Scheme
	clock     clock.Clock
	admission *admission.Chain
	logs      LogStreamer
	fields    *fieldmanager.Managers
	rand      func(n int) int
	stores    map[gvr]*Store
	byGR      map[schema.GroupResource]*Store

	strict *json.Serializer
	// json decodes without rejecting unknown fields and encodes responses.
	json    *json.Serializer
	pretty  *json.Serializer // indented JSON
	yamlEnc *json.Serializer
	proto   *protobuf.Serializer
	// frames lets watches that send the same shared object encode it once.
	frames *watchFrames
	// scale renders autoscaling/v1 Scale answers of every scale subresource.
	scale *Store
}

type gvr struct{ group, version, resource string }

// New builds the handler.
func New(cfg Config) *Handler {
	s := cfg.Scheme
	h := &Handler{
		scheme:    s,
		clock:     cfg.Clock,
		admission: cfg.Admission,
		logs:      cfg.Logs,
		fields:    cfg.Fields,
		rand:      cfg.Rand,
		stores:    make(map[gvr]*Store, len(cfg.Stores)),
		byGR:      make(map[schema.GroupResource]*Store, len(cfg.Stores)),
		strict:    json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Strict: true}),
		json:      json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{}),
		pretty:    json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Pretty: true}),
		yamlEnc:   json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true}),
		proto:     protobuf.NewSerializer(s, s),
		frames:    newWatchFrames(),
	}
	if h.clock == nil {
		h.clock = clock.RealClock{}
	}
	if h.rand == nil {
		h.rand = rand.IntN
	}
	h.scale = scaleStore(h.clock)
	for _, st := range cfg.Stores {
		h.stores[gvr{st.GroupVersion.Group, st.GroupVersion.Version, st.Name}] = st
		h.byGR[st.groupResource()] = st
	}
	return h
}

// Store returns the store serving a group and resource, for other parts of
// the server (admission, authorizers) that read objects directly.
func (h *Handler) Store(gr schema.GroupResource) (*Store, bool) {
	st, ok := h.byGR[gr]
	return st, ok
}

// ServeHTTP dispatches a resource request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, ok := request.InfoFrom(r.Context())
	if !ok {
		// Served without the router's middleware: decode warnings go
		// through the request info, so keep one in the context.
		info = request.Parse(r)
		info.WarnTo(w.Header())
		r = r.WithContext(request.WithInfo(r.Context(), info))
	}
	if !info.IsResourceRequest {
		writeError(w, r, NotFound(r))
		return
	}
	if info.APIGroup == "" && info.APIVersion == "v1" && info.Resource == "bindings" && !info.WatchPath && len(info.Parts) == 1 && info.Namespace != "" {
		// The legacy collection form of pods/binding: create only.
		if r.Method != http.MethodPost {
			writeError(w, r, MethodNotAllowed(r))
			return
		}
		mc, err := negotiate(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		info.Media = mc
		h.bindCollection(w, r, info.Namespace)
		return
	}
	st, ok := h.stores[gvr{info.APIGroup, info.APIVersion, info.Resource}]
	if !ok {
		writeError(w, r, NotFound(r))
		return
	}
	ns := info.Namespace
	name, sub := info.Name, info.Subresource
	if st.Name == "namespaces" {
		// /api/v1/namespaces/{name}[/{sub}]: the namespace is the object.
		ns = ""
	}
	if len(info.Parts) > 3 || (!st.Namespaced && ns != "") || (st.Namespaced && ns == "" && name != "") {
		writeError(w, r, NotFound(r))
		return
	}
	// The answer's form is settled before anything is written: a create
	// refused afterwards for its Accept header would still have happened.
	if sub != "log" {
		mc, err := negotiate(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		info.Media = mc
	}
	if info.WatchPath && (sub != "" || r.Method != http.MethodGet) {
		// Upstream's deprecated watch routes serve only GET, and no
		// subresource.
		if sub != "" {
			writeError(w, r, NotFound(r))
		} else {
			writeError(w, r, MethodNotAllowed(r))
		}
		return
	}
	switch sub {
	case "":
		h.serveMain(w, r, info, st, ns, name)
	case "status":
		if st.Status == nil {
			writeError(w, r, NotFound(r))
			return
		}
		h.serveStatus(w, r, st, ns, name)
	case "scale":
		if st.Scale == nil {
			writeError(w, r, NotFound(r))
			return
		}
		h.serveScale(w, r, st, ns, name)
	default:
		h.serveExtra(w, r, st, ns, name, sub)
	}
}

func (h *Handler) serveMain(w http.ResponseWriter, r *http.Request, info *request.Info, st *Store, ns, name string) {
	switch {
	case name == "" && r.Method == http.MethodGet:
		h.list(w, r, st, ns)
	case name == "" && r.Method == http.MethodPost:
		if st.Namespaced && ns == "" {
			writeError(w, r, NotFound(r))
			return
		}
		h.create(w, r, st, ns)
	case name == "" && r.Method == http.MethodDelete && !st.NoDeleteCollection:
		h.deleteCollection(w, r, st, ns)
	case name != "" && r.Method == http.MethodGet:
		if info.WatchPath {
			h.watchOne(w, r, st, ns, name)
			return
		}
		h.get(w, r, st, ns, name)
	case name != "" && r.Method == http.MethodPut:
		h.update(w, r, st, ns, name, mainEndpoint)
	case name != "" && r.Method == http.MethodPatch:
		h.patch(w, r, st, ns, name, mainEndpoint)
	case name != "" && r.Method == http.MethodDelete:
		h.delete(w, r, st, ns, name)
	default:
		writeError(w, r, MethodNotAllowed(r))
	}
}

func (h *Handler) serveStatus(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	switch r.Method {
	case http.MethodGet:
		h.get(w, r, st, ns, name)
	case http.MethodPut:
		h.update(w, r, st, ns, name, statusEndpoint)
	case http.MethodPatch:
		h.patch(w, r, st, ns, name, statusEndpoint)
	default:
		writeError(w, r, MethodNotAllowed(r))
	}
}

func (h *Handler) serveExtra(w http.ResponseWriter, r *http.Request, st *Store, ns, name, sub string) {
	switch {
	case st.Name == "pods" && st.GroupVersion.Group == "" && sub == "binding":
		if r.Method != http.MethodPost {
			writeError(w, r, MethodNotAllowed(r))
			return
		}
		h.bind(w, r, st, ns, name)
	case st.Name == "pods" && st.GroupVersion.Group == "" && sub == "eviction":
		if r.Method != http.MethodPost {
			writeError(w, r, MethodNotAllowed(r))
			return
		}
		h.evict(w, r, st, ns, name)
	case st.Name == "pods" && st.GroupVersion.Group == "" && sub == "log":
		if r.Method != http.MethodGet {
			writeError(w, r, MethodNotAllowed(r))
			return
		}
		h.podLog(w, r, st, ns, name)
	case st.Finalize != nil && sub == "finalize":
		if r.Method != http.MethodPut {
			writeError(w, r, MethodNotAllowed(r))
			return
		}
		h.update(w, r, st, ns, name, finalizeEndpoint)
	default:
		// Name the subresource: `kubectl exec` and `port-forward` only
		// print the message, and it should say what is missing.
		err := failure(http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("the server could not find the requested resource: kube-lite does not serve %s/%s", st.Name, sub))
		err.ErrStatus.Details = &metav1.StatusDetails{Group: st.GroupVersion.Group, Kind: st.Name, Name: name}
		writeError(w, r, err)
	}
}

// NotFound is the answer to a path nothing serves.
func NotFound(r *http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, strings.ToLower(r.Method), schema.GroupResource{}, "",
		"the server could not find the requested resource", 0, false)
}

// MethodNotAllowed is upstream's answer to a verb a path does not serve.
func MethodNotAllowed(r *http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, strings.ToLower(r.Method), schema.GroupResource{}, "", "", 0, false)
}

// setKind stamps apiVersion and kind, which objects decoded from storage
// lack, and leaves a right kind alone: objects from the watch cache are
// shared by every watch of the resource and already carry it, and
// concurrent writes, even of the same value, are a data race.
func setKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

func badRequestf(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}
