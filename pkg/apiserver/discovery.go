package apiserver

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/go-chi/chi/v5"
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
}

var objectVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

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
			Verbs: objectVerbs, ShortNames: res.ShortNames, Categories: res.Categories,
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
				Group: sub.Group, Kind: sub.Kind, Verbs: sub.Verbs})
		}
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
	return d
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
	writeJSON(w, d.apiVersions)
}
func (d *discovery) serveGroups(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.groupList) }

func (d *discovery) serveGroup(w http.ResponseWriter, r *http.Request) {
	body, ok := d.groups[chi.URLParam(r, "group")]
	if !ok {
		handler.WriteError(w, r, notFoundError())
		return
	}
	writeJSON(w, body)
}

func (d *discovery) serveResources(w http.ResponseWriter, r *http.Request) {
	gv := schema.GroupVersion{Group: chi.URLParam(r, "group"), Version: chi.URLParam(r, "version")}
	body, ok := d.resources[gv]
	if !ok {
		handler.WriteError(w, r, notFoundError())
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
