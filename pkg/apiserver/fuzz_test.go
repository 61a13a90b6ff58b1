package apiserver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/etcd"
)

// fuzzTargets are the collections the fuzzer writes into and the object
// in each that patches are applied to.
var fuzzTargets = []struct {
	collection string
	base       string
}{
	{"/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"base","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox:1.35","ports":[{"containerPort":80}]},{"name":"d","image":"busybox"}]}}`},
	{"/apis/apps/v1/namespaces/default/deployments", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"base"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
	{"/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"base"},"data":{"k":"v"}}`},
}

var bodyTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", ""}

var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

// FuzzDecodeValidatePatch sends arbitrary create bodies and patches for a
// pod, a deployment and a configmap through the whole server (decode,
// defaults, admission, validation, the three patch types). Whatever the
// input, the answer is a response below 500: bad input is the client's
// error, never the server's, and a panic would surface as a 500 from the
// recovery middleware. Writes are dry runs so that the stored base objects
// stay as they are and the result depends on the input only.
func FuzzDecodeValidatePatch(f *testing.F) {
	h := fuzzServer(f)

	seeds := []struct {
		target, bodyType, patchType uint8
		body, patch                 string
	}{
		{0, 0, 0, fuzzTargets[0].base, `[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.36"}]`},
		{0, 1, 2, "apiVersion: v1\nkind: Pod\nmetadata: {name: y}\nspec:\n  containers: [{name: c, image: x}]\n", `{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}`},
		{0, 0, 2, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{}}`, `{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}`},
		{0, 0, 2, `{"kind":"Pod"}`, `{"spec":{"$setElementOrder/containers":[{"name":"d"},{"name":"c"}]}}`},
		{0, 0, 2, `{`, `{"metadata":{"labels":{"$patch":"replace","x":"y"}}}`},
		{0, 0, 2, `null`, `{"spec":{"containers":[{"name":"c","ports":[{"$patch":"replace"}]}]}}`},
		{0, 0, 2, `[]`, `{"spec":{"$retainKeys":["containers"],"containers":null}}`},
		{0, 0, 1, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","resourceVersion":"abc"}}`, `{"metadata":{"labels":null},"spec":{"nodeName":"n"}}`},
		{0, 0, 0, `{"apiVersion":"v2","kind":"Pod"}`, `[{"op":"remove","path":"/spec/containers/9"}]`},
		{0, 0, 0, `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"resources":{"limits":{"cpu":"1e1000"}}}]}}`, `[{"op":"move","from":"/metadata","path":"/metadata/labels"}]`},
		{0, 0, 0, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":-1}]}]}}`, `[{"op":"add","path":"/metadata/name","value":{}}]`},
		{0, 2, 0, "\x6b\x38\x73\x00\x0a\x02\x76\x31", `[{"op":"copy","from":"/spec","path":"/spec/containers/-"}]`},
		{0, 3, 1, `{"apiVersion":"v1","kind":"Pod"}`, `"just a string"`},
		{1, 0, 1, fuzzTargets[1].base, `{"spec":{"replicas":-5}}`},
		{1, 1, 2, "kind: Deployment\napiVersion: apps/v1\nmetadata: {name: d}\nspec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {c: d}}}}\n", `{"spec":{"selector":{"matchLabels":{"app":"y"}}}}`},
		{1, 0, 2, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"strategy":{"type":"Nope"}}}`, `{"spec":{"template":{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}}}`},
		{2, 0, 1, fuzzTargets[2].base, `{"data":{"k":null,"n":1}}`},
		{2, 1, 0, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: &a x\n  labels: *a\n", `[{"op":"test","path":"/data/k","value":"v"},{"op":"remove","path":"/data"}]`},
		{2, 1, 3, "a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "apiVersion: v1\nkind: ConfigMap\n"},
		{2, 0, 1, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e","namespace":"other"}}`, `{"metadata":{"namespace":"other","name":"renamed","uid":"u"}}`},
		// Found by this fuzzer: they once panicked in the patch libraries.
		{2, 0, 0, `{"kind":"Pod"}`, `[{"op":"replace","path":""}]`},
		{0, 0, 2, `{"kind":"Pod"}`, `{"spec":{"containers":[{"name":[]}]}}`},
	}
	for _, s := range seeds {
		f.Add(s.target, s.bodyType, s.patchType, []byte(s.body), []byte(s.patch))
	}

	f.Fuzz(func(t *testing.T, target, bodyType, patchType uint8, body, patch []byte) {
		tg := fuzzTargets[int(target)%len(fuzzTargets)]
		ct := bodyTypes[int(bodyType)%len(bodyTypes)]
		pt := patchTypes[int(patchType)%len(patchTypes)]
		requests := []struct {
			method, path, contentType string
			body                      []byte
		}{
			{http.MethodPost, tg.collection + "?dryRun=All", ct, body},
			{http.MethodPut, tg.collection + "/base?dryRun=All", ct, body},
			{http.MethodPatch, tg.collection + "/base?dryRun=All", pt, patch},
			{http.MethodPatch, tg.collection + "/base/status?dryRun=All", pt, patch},
		}
		for _, rq := range requests {
			req := httptest.NewRequest(rq.method, rq.path, bytes.NewReader(rq.body))
			if rq.contentType != "" {
				req.Header.Set("Content-Type", rq.contentType)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s (%s) = %d\nbody: %q\nresponse: %s", rq.method, rq.path, rq.contentType, rec.Code, rq.body, rec.Body.Bytes())
			}
		}
	})
}

// fuzzServer assembles a server on an embedded etcd and creates the base
// objects the patches apply to.
func fuzzServer(f *testing.F) http.Handler {
	f.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: f.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		cancel()
		f.Fatalf("start etcd: %v", err)
	}
	client := e.InProcessClient()
	f.Cleanup(func() {
		cancel()
		_ = client.Close()
		e.Stop()
	})
	srv, err := apiserver.New(ctx, apiserver.Config{Etcd: client})
	if err != nil {
		f.Fatalf("assemble apiserver: %v", err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		f.Fatalf("bootstrap: %v", err)
	}
	h := srv.Handler()
	for _, tg := range fuzzTargets {
		req := httptest.NewRequest(http.MethodPost, tg.collection, bytes.NewReader([]byte(tg.base)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			f.Fatalf("create base object in %s: %d %s", tg.collection, rec.Code, rec.Body.Bytes())
		}
	}
	return h
}
