package handler

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// replayStore hands every watch the same events with the same objects, as
// the watch cache does.
type replayStore struct {
	memStore
	events []watch.Event
}

func (s *replayStore) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(len(s.events), false)
	for _, ev := range s.events {
		w.Action(ev.Type, ev.Object)
	}
	w.Stop()
	return sharedFakeWatch{w}, nil
}

// sharedFakeWatch is a fake watch whose objects are shared, as the watch
// cache's are.
type sharedFakeWatch struct{ *watch.FakeWatcher }

func (sharedFakeWatch) SharesObjects() {}

// TestSharedWatchFrames: watches that send one shared object reuse each
// other's encoding only where the bytes are the same: each watch still gets
// its own format, each event its own type, and a Table watch its rows.
func TestSharedWatchFrames(t *testing.T) {
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv},
		}
	}
	a, b := cm("a", "7"), cm("b", "8")
	h := testHandler(&memStore{}, nil)
	st, _ := h.Store(corev1.Resource("configmaps"))
	// The same object as ADDED for one watch and MODIFIED for another (a
	// selection), and a second object.
	st.Storage = &replayStore{events: []watch.Event{
		{Type: watch.Added, Object: a}, {Type: watch.Modified, Object: a}, {Type: watch.Added, Object: b},
	}}
	watchBody := func(accept string) string {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=5", nil)
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", accept, w.Code, w.Body)
		}
		return w.Body.String()
	}
	want := []string{"ADDED a", "MODIFIED a", "ADDED b"}
	for round := range 2 { // the second round is served from the frames of the first
		if got := jsonEvents(t, watchBody("application/json")); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("round %d: JSON watch got %v, want %v", round, got, want)
		}
		if got := protoEvents(t, watchBody("application/vnd.kubernetes.protobuf")); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("round %d: protobuf watch got %v, want %v", round, got, want)
		}
		table := watchBody("application/json;as=Table;v=v1;g=meta.k8s.io")
		if !strings.Contains(table, `"kind":"Table"`) || strings.Count(table, "\n") != 3 {
			t.Errorf("round %d: Table watch got %s", round, table)
		}
	}
}

// jsonEvents returns "TYPE name" of each event of a JSON watch stream.
func jsonEvents(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Kind     string            `json:"kind"`
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("JSON event %q: %v", sc.Text(), err)
		}
		if ev.Object.Kind != "ConfigMap" {
			t.Errorf("JSON event of kind %q", ev.Object.Kind)
		}
		out = append(out, ev.Type+" "+ev.Object.Metadata.Name)
	}
	return out
}

// protoEvents returns "TYPE name" of each frame of a protobuf watch stream.
func protoEvents(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	r := strings.NewReader(body)
	for {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("protobuf frame length: %v", err)
		}
		data := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatalf("protobuf frame: %v", err)
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(data); err != nil {
			t.Fatalf("protobuf WatchEvent: %v", err)
		}
		obj, _, err := testHandler(&memStore{}, nil).proto.Decode(ev.Object.Raw, nil, &corev1.ConfigMap{})
		if err != nil {
			t.Fatalf("protobuf object: %v", err)
		}
		out = append(out, ev.Type+" "+obj.(*corev1.ConfigMap).Name)
	}
}
