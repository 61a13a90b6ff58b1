package apiserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/version"
)

// discovery serves /api, /apis and the group-version resource lists,
// computed once: the set of resources never changes while running.
type discovery struct {
	apiVersions []byte
	groupList   []byte
	groups      map[string][]byte
	resources   map[schema.GroupVersion][]byte
	// aggregatedCore and aggregatedGroups are /api and /apis as
	// apidiscovery.k8s.io/v2 APIGroupDiscoveryLists, which kubectl and
	// client-go ask for first: every resource in one request.
	aggregatedCore   []byte
	aggregatedGroups []byte
}

var objectVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// verbsOf lists the verbs a resource serves.
func verbsOf(res *registry.Resource) metav1.Verbs {
	if !res.NoDeleteCollection {
		return objectVerbs
	}
	return slices.DeleteFunc(slices.Clone(objectVerbs), func(v string) bool { return v == "deletecollection" })
}

func newDiscovery(resources []*registry.Resource) *discovery {
	lists := map[schema.GroupVersion]*metav1.APIResourceList{}
	var order []schema.GroupVersion
	for _, res := range resources {
		gv := res.GroupVersion
		l, ok := lists[gv]
		if !ok {
			l = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			lists[gv] = l
			order = append(order, gv)
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: res.Name, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.Kind,
			Verbs: verbsOf(res), ShortNames: res.ShortNames, Categories: res.Categories,
			StorageVersionHash: storageVersionHash(res.GroupVersionKind()),
		})
		if res.Status != nil {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: res.Name + "/status", Namespaced: res.Namespaced,
				Kind: res.Kind, Verbs: metav1.Verbs{"get", "patch", "update"}})
		}
		if res.Scale != nil {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: res.Name + "/scale", Namespaced: res.Namespaced,
				Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: metav1.Verbs{"get", "patch", "update"}})
		}
		for _, sub := range res.ExtraSubresources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: res.Name + "/" + sub.Name, Namespaced: res.Namespaced,
				Group: sub.Group, Version: sub.Version, Kind: sub.Kind, Verbs: sub.Verbs})
		}
	}
	// bindings is the legacy collection form of pods/binding, served with it
	// (handler.ServeHTTP), and listed as upstream lists it.
	if l := lists[schema.GroupVersion{Version: "v1"}]; l != nil && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods/binding" }) {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: "bindings", SingularName: "binding", Namespaced: true,
			Kind: "Binding", Verbs: metav1.Verbs{"create"}})
	}
	for _, extra := range securityDiscovery() {
		gv, _ := schema.ParseGroupVersion(extra.GroupVersion)
		l, ok := lists[gv]
		if !ok {
			l = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			lists[gv] = l
			order = append(order, gv)
		}
		l.APIResources = append(l.APIResources, extra.APIResources...)
	}
	d := &discovery{groups: map[string][]byte{}, resources: map[schema.GroupVersion][]byte{}}
	d.apiVersions = mustJSON(&metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: ""}}})
	groupList := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	groups := map[string]*metav1.APIGroup{}
	for _, gv := range order {
		sort.Slice(lists[gv].APIResources, func(i, j int) bool { return lists[gv].APIResources[i].Name < lists[gv].APIResources[j].Name })
		d.resources[gv] = mustJSON(lists[gv])
		if gv.Group == "" {
			continue
		}
		g, ok := groups[gv.Group]
		if !ok {
			gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			g = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: gv.Group, PreferredVersion: gvd}
			groups[gv.Group] = g
			groupList.Groups = append(groupList.Groups, metav1.APIGroup{}) // placeholder keeps first-seen order
		}
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
	}
	i := 0
	seen := map[string]bool{}
	for _, gv := range order {
		if gv.Group == "" || seen[gv.Group] {
			continue
		}
		seen[gv.Group] = true
		groupList.Groups[i] = *groups[gv.Group]
		d.groups[gv.Group] = mustJSON(groups[gv.Group])
		i++
	}
	d.groupList = mustJSON(groupList)
	var core, named []schema.GroupVersion
	for _, gv := range order {
		if gv.Group == "" {
			core = append(core, gv)
		} else {
			named = append(named, gv)
		}
	}
	d.aggregatedCore = mustJSON(aggregatedDiscovery(lists, core))
	d.aggregatedGroups = mustJSON(aggregatedDiscovery(lists, named))
	return d
}

// storageVersionHash is upstream's fingerprint of the version a resource is
// stored in (the first 8 bytes of sha256("group/version/kind"), base64):
// storage migrators compare it to see whether objects need rewriting.
func storageVersionHash(gvk schema.GroupVersionKind) string {
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// aggregatedDiscovery lists the group versions in gvs, grouped by group in
// the order given (the first version of a group is its preferred one).
func aggregatedDiscovery(lists map[schema.GroupVersion]*metav1.APIResourceList, gvs []schema.GroupVersion) *apidiscoveryv2.APIGroupDiscoveryList {
	out := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	index := map[string]int{}
	for _, gv := range gvs {
		i, ok := index[gv.Group]
		if !ok {
			i = len(out.Items)
			index[gv.Group] = i
			out.Items = append(out.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
		}
		out.Items[i].Versions = append(out.Items[i].Versions, versionDiscovery(gv, lists[gv]))
	}
	return out
}

func versionDiscovery(gv schema.GroupVersion, l *metav1.APIResourceList) apidiscoveryv2.APIVersionDiscovery {
	v := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	parents := map[string]int{}
	for _, r := range l.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		parents[r.Name] = len(v.Resources)
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: r.Kind},
			Scope: scope, SingularResource: r.SingularName, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	for _, r := range l.APIResources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		i, found := parents[parent]
		if !ok || !found {
			continue
		}
		kind := metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: r.Kind}
		if r.Version != "" {
			kind.Group, kind.Version = r.Group, r.Version
		}
		v.Resources[i].Subresources = append(v.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: &kind, Verbs: r.Verbs,
		})
	}
	return v
}

// aggregatedType is the Content-Type of an aggregated discovery answer;
// client-go reads its parameters to tell it from the legacy documents.
const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether the first Accept entry kube-lite can
// answer asks for aggregated discovery (v2; v2beta1 is not served).
func wantsAggregated(r *http.Request) bool {
	for _, entry := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(entry))
		if err != nil {
			continue
		}
		if mt != "application/json" && mt != "*/*" && mt != "application/*" {
			continue
		}
		if params["as"] == "" {
			return false
		}
		if params["as"] == "APIGroupDiscoveryList" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" {
			return true
		}
	}
	return false
}

func writeAggregated(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", aggregatedType)
	w.Header().Set("Vary", "Accept")
	_, _ = w.Write(body)
}

func mustJSON(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // static discovery documents always marshal
	}
	return b
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (d *discovery) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		writeAggregated(w, d.aggregatedCore)
		return
	}
	w.Header().Set("Vary", "Accept")
	writeJSON(w, d.apiVersions)
}

func (d *discovery) serveGroups(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		writeAggregated(w, d.aggregatedGroups)
		return
	}
	w.Header().Set("Vary", "Accept")
	writeJSON(w, d.groupList)
}

func (d *discovery) serveGroup(w http.ResponseWriter, r *http.Request) {
	body, ok := d.groups[chi.URLParam(r, "group")]
	if !ok {
		handler.WriteError(w, r, handler.NotFound(r))
		return
	}
	writeJSON(w, body)
}

func (d *discovery) serveResources(w http.ResponseWriter, r *http.Request) {
	gv := schema.GroupVersion{Group: chi.URLParam(r, "group"), Version: chi.URLParam(r, "version")}
	body, ok := d.resources[gv]
	if !ok {
		handler.WriteError(w, r, handler.NotFound(r))
		return
	}
	writeJSON(w, body)
}

// serveVersion answers /version with the release whose API kube-lite serves.
func serveVersion() http.HandlerFunc {
	info := version.Get()
	body := mustJSON(&info)
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, body) }
}
