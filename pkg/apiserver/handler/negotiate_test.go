package handler

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// TestAcceptIsNegotiatedOnce: ServeHTTP settles the answer's form before
// it runs the request, and answering uses that form instead of parsing the
// Accept header again.
func TestAcceptIsNegotiatedOnce(t *testing.T) {
	h := testHandler(&memStore{objs: map[string]*corev1.ConfigMap{}}, nil)
	if code, st, _ := serve(t, h, http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, st.Message)
	}

	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps/a", nil)
	r.Header.Set("Accept", "application/yaml")
	info := request.Parse(r)
	r = r.WithContext(request.WithInfo(r.Context(), info))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if mc, ok := info.Media.(mediaChoice); !ok || !mc.yaml || w.Header().Get("Content-Type") != "application/yaml" {
		t.Fatalf("negotiated %#v, answered in %q; want YAML, kept on the request", info.Media, w.Header().Get("Content-Type"))
	}

	// The answer reads the form kept, not the header.
	info.Media = mediaChoice{}
	st, _ := h.Store(corev1.Resource("configmaps"))
	w = httptest.NewRecorder()
	h.respond(w, r, st, http.StatusOK, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	if ct := w.Header().Get("Content-Type"); ct != "application/json" || !strings.HasPrefix(w.Body.String(), "{") {
		t.Errorf("answered in %q: %.40s, want the JSON kept on the request", ct, w.Body.String())
	}
}

// TestWatchRefusesYAML: YAML has no stream form, and upstream answers a
// watch asking only for it 406 rather than streaming JSON.
func TestWatchRefusesYAML(t *testing.T) {
	h := testHandler(&memStore{objs: map[string]*corev1.ConfigMap{}}, nil)
	for _, accept := range []string{"application/yaml", "application/yaml, application/json"} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps?watch=1", nil)
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		want := "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
		if w.Code != http.StatusNotAcceptable || !strings.Contains(w.Body.String(), want) {
			t.Errorf("watch with Accept %q: %d %s, want upstream's 406", accept, w.Code, w.Body.String())
		}
	}
}

// TestPrettyJSON: as upstream's, JSON answers (objects and errors) are
// indented with ?pretty=true (or 1); otherwise they are compact.
func TestPrettyJSON(t *testing.T) {
	h := testHandler(&memStore{objs: map[string]*corev1.ConfigMap{}}, nil)
	if code, st, _ := serve(t, h, http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, st.Message)
	}
	for _, tc := range []struct {
		path, agent string
		pretty      bool
	}{
		{"/api/v1/namespaces/default/configmaps/a?pretty=true", "kubectl/v1.36.3", true},
		{"/api/v1/namespaces/default/configmaps/missing?pretty=1", "curl/8.5.0", true},
		{"/api/v1/namespaces/default/configmaps/a?pretty=false", "curl/8.5.0", false},
		{"/api/v1/namespaces/default/configmaps/a", "curl/8.5.0", false},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		r.Header.Set("User-Agent", tc.agent)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := strings.HasPrefix(w.Body.String(), "{\n  \"kind\": "); got != tc.pretty {
			t.Errorf("%s by %s: %.30q, want indented %v", tc.path, tc.agent, w.Body.String(), tc.pretty)
		}
	}
}

// TestAcceptQuality: as upstream's, media ranges are tried by quality,
// highest first, and one of q=0 is still served when nothing else fits
// (the first listed one won whatever its q).
func TestAcceptQuality(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   mediaChoice
	}{
		{"application/yaml;q=0.5, application/json", mediaChoice{}},
		{"application/json;q=0, application/yaml", mediaChoice{yaml: true}},
		{"application/json;q=0", mediaChoice{}},
		{"application/yaml;q=0", mediaChoice{yaml: true}},
		{"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.9, application/yaml", mediaChoice{yaml: true}},
		{"application/json;q=0.2, application/json;as=Table;v=v1;g=meta.k8s.io;q=0.8", mediaChoice{kind: outputTable, tableVers: "v1"}},
		{"application/yaml;q=abc, application/json;q=0.001", mediaChoice{}},
		// Upstream's order puts a named type before "*/*" whatever their
		// qualities.
		{"*/*, application/yaml;q=0.1", mediaChoice{yaml: true}},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps/a", nil)
		r.Header.Set("Accept", tc.accept)
		got, err := negotiate(r)
		if err != nil || got != tc.want {
			t.Errorf("Accept %q: %+v, %v; want %+v", tc.accept, got, err, tc.want)
		}
	}
}
