package apiserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func statusCode(err error) int32 {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code
	}
	return 0
}

func TestListPagesAndSelectors(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	pods := s.Client.CoreV1().Pods("default")
	for i := 0; i < 5; i++ {
		p := testPod(fmt.Sprintf("p%d", i))
		if i%2 == 0 {
			p.Labels["tier"] = "front"
		}
		if i < 2 {
			p.Spec.NodeName = "n1"
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var names []string
	opts := metav1.ListOptions{Limit: 2}
	pages := 0
	for {
		list, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(list.Items) > 2 {
			t.Fatalf("page of %d items with limit 2", len(list.Items))
		}
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if pages != 3 || fmt.Sprint(names) != "[p0 p1 p2 p3 p4]" {
		t.Fatalf("pages %d, names %v", pages, names)
	}

	cases := []struct {
		label, field string
		want         []string
	}{
		{label: "tier=front", want: []string{"p0", "p2", "p4"}},
		{label: "tier!=front", want: []string{"p1", "p3"}},
		{field: "spec.nodeName=n1", want: []string{"p0", "p1"}},
		{field: "spec.nodeName=", want: []string{"p2", "p3", "p4"}},
		{label: "tier=front", field: "spec.nodeName=n1", want: []string{"p0"}},
		{field: "metadata.name=p3", want: []string{"p3"}},
		{field: "status.phase=Pending", want: []string{"p0", "p1", "p2", "p3", "p4"}},
	}
	for _, c := range cases {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: c.label, FieldSelector: c.field})
		if err != nil {
			t.Fatalf("%q %q: %v", c.label, c.field, err)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Name)
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("label %q field %q: got %v, want %v", c.label, c.field, got, c.want)
		}
	}

	// A filtered page still holds `limit` items when enough match.
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "tier=front", Limit: 2})
	if err != nil || len(list.Items) != 2 || list.Continue == "" {
		t.Fatalf("filtered page: %v, %d items, continue %q", err, len(list.Items), list.Continue)
	}

	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=1"})
	if statusCode(err) != http.StatusBadRequest || err.Error() != "field label not supported: spec.bogus" {
		t.Fatalf("unsupported field label: want 400, got %v", err)
	}
	// Kinds without fields of their own say which two they have, as upstream.
	_, err = s.Client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{FieldSelector: "data.x=1"})
	if want := `"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"`; statusCode(err) != http.StatusBadRequest || err.Error() != want {
		t.Fatalf("configmap field selector data.x: got %v, want 400 %q", err, want)
	}
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName in (a)"})
	if want := "invalid selector: 'spec.nodeName in (a)'; can't understand 'spec.nodeName in (a)'"; statusCode(err) != http.StatusBadRequest || err.Error() != want {
		t.Fatalf("unparsable field selector: got %v, want 400 %q", err, want)
	}
	_, err = pods.List(ctx, metav1.ListOptions{LabelSelector: "a in (b"})
	if statusCode(err) != http.StatusBadRequest {
		t.Fatalf("bad label selector: want 400, got %v", err)
	}
	if msg := err.Error(); strings.Count(msg, "unable to parse requirement") != 1 {
		t.Fatalf("bad label selector: message %q, want the parser's reason once", msg)
	}

	// Across namespaces.
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Pods("other").Create(ctx, testPod("x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 6 {
		t.Fatalf("all namespaces: %v, %d items", err, len(all.Items))
	}
	other, err := s.Client.CoreV1().Pods("other").List(ctx, metav1.ListOptions{})
	if err != nil || len(other.Items) != 1 {
		t.Fatalf("namespace other: %v, %d items", err, len(other.Items))
	}
}

func TestListAndWatchOptionsAsUpstream(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	invalid := []struct {
		name string
		opts metav1.ListOptions
		want string
	}{
		{"exact at 0", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			`resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{"sendInitialEvents on a list", metav1.ListOptions{SendInitialEvents: &yes},
			"sendInitialEvents is forbidden for list"},
		{"watch with sendInitialEvents and no match", metav1.ListOptions{Watch: true, SendInitialEvents: &yes, AllowWatchBookmarks: true},
			"sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
		{"watch with a match and no sendInitialEvents", metav1.ListOptions{Watch: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			"resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cms.List(ctx, tc.opts)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), `ListOptions.meta.k8s.io "" is invalid`) {
				t.Errorf("got %v, want 422 ListOptions.meta.k8s.io ... %s", err, tc.want)
			}
		})
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, page.Continue)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue, ResourceVersion: cm.ResourceVersion})
	if !apierrors.IsBadRequest(err) || err.Error() != "specifying resource version is not allowed when using continue" {
		t.Errorf("continue with a resourceVersion: %v, want upstream's 400", err)
	}

	// sendInitialEvents=false: no ADDED events for what exists, only changes.
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &no, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if m, ok := ev.Object.(*corev1.ConfigMap); !ok || ev.Type != watch.Added || m.Name != "c" {
			t.Errorf("first event %s %#v, want ADDED c (no initial events)", ev.Type, ev.Object)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
}

// Query parameters are read as upstream's: a limit of zero or less lists
// everything, a parameter that is not a number is a 400 in strconv's words,
// a resourceVersion that is not a revision is a 400 for a list and a 500
// for a watch, and a boolean is true unless it is "0" or "false".
func TestListQueryParametersAsUpstream(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	for _, name := range []string{"a", "b"} {
		if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rc := s.Client.CoreV1().RESTClient()
	get := func(params ...string) rest.Result {
		req := rc.Get().AbsPath("/api/v1/namespaces/default/configmaps")
		for i := 0; i < len(params); i += 2 {
			req = req.Param(params[i], params[i+1])
		}
		return req.Do(ctx)
	}
	var list corev1.ConfigMapList
	if err := get("limit", "-1").Into(&list); err != nil || len(list.Items) != 2 || list.Continue != "" {
		t.Errorf("limit=-1: %v, %d items, continue %q; want both, unpaged", err, len(list.Items), list.Continue)
	}
	refused := []struct {
		params []string
		code   int32
		want   string
	}{
		{[]string{"limit", "abc"}, http.StatusBadRequest, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{[]string{"limit", "y", "timeoutSeconds", "x"}, http.StatusBadRequest, `strconv.ParseInt: parsing "x": invalid syntax`},
		{[]string{"resourceVersion", "x"}, http.StatusBadRequest,
			`invalid resource version: resourceVersion: Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax`},
		{[]string{"watch", "yes", "resourceVersion", "-1"}, http.StatusInternalServerError,
			`resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax`},
	}
	for _, tc := range refused {
		err := get(tc.params...).Error()
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != tc.code || se.ErrStatus.Message != tc.want {
			t.Errorf("%v: got %v, want %d %q", tc.params, err, tc.code, tc.want)
		}
	}
	body, err := get("watch", "", "timeoutSeconds", "1").Raw()
	if err != nil || !strings.HasPrefix(string(body), `{"type":"ADDED"`) {
		t.Errorf("watch= (empty): %v %.60s, want a watch as upstream's", err, body)
	}
}

// A get or list at a resourceVersion the store has not reached waits for
// it, as upstream's watch cache does: a write landing meanwhile makes the
// read succeed, and otherwise it ends in upstream's 504 with the
// ResourceVersionTooLarge cause and Retry-After that reflectors act on.
func TestReadAtAFutureResourceVersion(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// A raw client: client-go would retry the 504 as its Retry-After says.
	hc, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, path string) (int, http.Header, metav1.Status) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st metav1.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, st
	}

	// The next write lands while the reads wait.
	done := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
		done <- err
	}()
	next := strconv.FormatInt(rv+1, 10)
	if code, _, st := get(t, "/api/v1/namespaces/default/configmaps?resourceVersion="+next+"&resourceVersionMatch=NotOlderThan"); code != http.StatusOK {
		t.Errorf("list at the next revision: %d %s, want 200 once the write lands", code, st.Message)
	}
	if code, _, st := get(t, "/api/v1/namespaces/default/configmaps/a?resourceVersion="+next); code != http.StatusOK {
		t.Errorf("get at the next revision: %d %s, want 200", code, st.Message)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	far := strconv.FormatInt(rv+1000, 10)
	for name, path := range map[string]string{
		"list":       "/api/v1/namespaces/default/configmaps?resourceVersion=" + far,
		"exact page": "/api/v1/namespaces/default/configmaps?limit=1&resourceVersion=" + far + "&resourceVersionMatch=Exact",
		"get":        "/api/v1/namespaces/default/configmaps/a?resourceVersion=" + far,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each waits out the freshness bound
			code, h, st := get(t, path)
			if code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout || h.Get("Retry-After") != "1" ||
				!strings.HasPrefix(st.Message, "Timeout: Too large resource version: "+far+", current: ") ||
				st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
				t.Errorf("%d Retry-After %q %+v, want upstream's 504 Too large resource version", code, h.Get("Retry-After"), st)
			}
		})
	}
}
