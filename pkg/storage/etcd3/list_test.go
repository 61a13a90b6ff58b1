package etcd3

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

func names(l *corev1.ConfigMapList) []string {
	var out []string
	for _, cm := range l.Items {
		out = append(out, cm.Name)
	}
	return out
}

// listAll follows continue tokens until the list ends and returns every
// page.
func listAll(t *testing.T, s storage.Interface, prefix string, opts storage.ListOptions, between func(page int)) []*corev1.ConfigMapList {
	t.Helper()
	var pages []*corev1.ConfigMapList
	for {
		l := &corev1.ConfigMapList{}
		if err := s.List(testCtx(t), prefix, opts, l); err != nil {
			t.Fatalf("list page %d: %v", len(pages), err)
		}
		pages = append(pages, l)
		if l.Continue == "" {
			return pages
		}
		if len(pages) > 100 {
			t.Fatalf("list does not end")
		}
		if between != nil {
			between(len(pages))
		}
		opts.Continue = l.Continue
		opts.ResourceVersion = ""
	}
}

func TestListPagingIsOneSnapshot(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)
	var want []string
	for i := range 10 {
		name := fmt.Sprintf("cm-%02d", i)
		mustCreate(t, s, configMap("ns", name, nil, map[string]string{"v": "orig"}))
		want = append(want, name)
	}
	// Another namespace whose name extends "ns" must not leak into the list.
	mustCreate(t, s, configMap("ns2", "other", nil, nil))

	pages := listAll(t, s, "/configmaps/ns", storage.ListOptions{Limit: 3}, func(page int) {
		// Writes between pages must not show: pages are read at the first
		// page's revision.
		mustCreate(t, s, configMap("ns", fmt.Sprintf("cm-%02da-new", page), nil, nil))
		if err := s.Delete(ctx, cmKey("ns", fmt.Sprintf("cm-%02d", 9-page)), &corev1.ConfigMap{}, nil, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if err := s.GuaranteedUpdate(ctx, cmKey("ns", "cm-08"), &corev1.ConfigMap{}, true, nil, setAnnotation("p", strconv.Itoa(page))); err != nil {
			t.Fatalf("update: %v", err)
		}
	})

	var got []string
	for i, p := range pages {
		got = append(got, names(p)...)
		if p.ResourceVersion != pages[0].ResourceVersion {
			t.Errorf("page %d read at %s, first page at %s", i, p.ResourceVersion, pages[0].ResourceVersion)
		}
		for _, cm := range p.Items {
			if cm.Annotations["p"] != "" || cm.ResourceVersion == "" {
				t.Errorf("page %d: %s has annotations %v rv %q, want the first page's snapshot", i, cm.Name, cm.Annotations, cm.ResourceVersion)
			}
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paged list = %v, want %v", got, want)
	}
	if len(pages) != 4 {
		t.Errorf("%d pages of limit 3 for 10 items, want 4", len(pages))
	}
	if r := pages[0].RemainingItemCount; r == nil || *r != 7 {
		t.Errorf("first page remainingItemCount = %v, want 7", r)
	}
	if r := pages[len(pages)-1].RemainingItemCount; r != nil {
		t.Errorf("last page remainingItemCount = %d, want unset", *r)
	}
}

func TestListFilteredFillsLimit(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	var want []string
	for i := range 250 {
		lbl := "odd"
		if i%2 == 0 {
			lbl = "even"
		}
		name := fmt.Sprintf("cm-%03d", i)
		mustCreate(t, s, configMap("ns", name, map[string]string{"parity": lbl}, nil))
		if lbl == "even" {
			want = append(want, name)
		}
	}
	tests := []struct {
		name      string
		pred      storage.SelectionPredicate
		limit     int64
		want      []string
		wantPages int
	}{
		{name: "label selector, small pages", pred: labelPredicate(t, "parity=even"), limit: 50, want: want, wantPages: 3},
		{name: "label selector, no limit", pred: labelPredicate(t, "parity=even"), want: want, wantPages: 1},
		{name: "field selector", limit: 2, want: []string{"cm-007"}, wantPages: 1,
			pred: storage.SelectionPredicate{Field: fields.OneTermEqualSelector("metadata.name", "cm-007"), GetAttrs: configMapAttrs}},
		{name: "nothing matches", pred: labelPredicate(t, "parity=none"), limit: 10, wantPages: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pages := listAll(t, s, "/configmaps", storage.ListOptions{Limit: tt.limit, Predicate: tt.pred}, nil)
			var got []string
			for i, p := range pages {
				if tt.limit > 0 && int64(len(p.Items)) > tt.limit {
					t.Errorf("page %d has %d items, limit %d", i, len(p.Items), tt.limit)
				}
				// A page is only cut short at the end of the list.
				if i < len(pages)-1 && int64(len(p.Items)) != tt.limit {
					t.Errorf("page %d has %d items, want the limit %d", i, len(p.Items), tt.limit)
				}
				if p.RemainingItemCount != nil {
					t.Errorf("page %d of a filtered list claims %d remaining items", i, *p.RemainingItemCount)
				}
				got = append(got, names(p)...)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			// The final page may be empty when the limit was met exactly.
			if len(pages) != tt.wantPages && len(pages) != tt.wantPages+1 {
				t.Errorf("%d pages, want %d", len(pages), tt.wantPages)
			}
		})
	}
}

func TestListResourceVersions(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)
	first := mustCreate(t, s, configMap("ns", "a", nil, nil))
	mustCreate(t, s, configMap("ns", "b", nil, nil))

	tests := []struct {
		name           string
		opts           storage.ListOptions
		want           []string
		wantErr        error
		wantBadRequest bool
		wantRVSet      string
	}{
		{name: "latest", opts: storage.ListOptions{}, want: []string{"a", "b"}},
		{name: "any", opts: storage.ListOptions{ResourceVersion: "0"}, want: []string{"a", "b"}},
		{name: "exact old revision", opts: storage.ListOptions{ResourceVersion: first.ResourceVersion, Exact: true},
			want: []string{"a"}, wantRVSet: first.ResourceVersion},
		{name: "not older than", opts: storage.ListOptions{ResourceVersion: first.ResourceVersion}, want: []string{"a", "b"}},
		{name: "future revision", opts: storage.ListOptions{ResourceVersion: "999999999"}, wantErr: storage.ErrTooLargeResourceVers},
		{name: "future exact revision", opts: storage.ListOptions{ResourceVersion: "999999999", Exact: true}, wantErr: storage.ErrTooLargeResourceVers},
		{name: "garbage continue", opts: storage.ListOptions{Continue: "not-a-token"}, wantErr: storage.ErrInvalidContinue},
		{name: "malformed resourceVersion", opts: storage.ListOptions{ResourceVersion: "abc"}, wantBadRequest: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &corev1.ConfigMapList{}
			err := s.List(ctx, "/configmaps", tt.opts, l)
			if tt.wantBadRequest {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("list: error %v, want a 400 BadRequest", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || (err != nil && tt.wantErr == nil) {
				t.Fatalf("list: error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := names(l)
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if tt.wantRVSet != "" && l.ResourceVersion != tt.wantRVSet {
				t.Errorf("list resourceVersion %s, want %s", l.ResourceVersion, tt.wantRVSet)
			}
			if l.ResourceVersion == "" {
				t.Errorf("list has no resourceVersion")
			}
		})
	}
}

func TestEmptyListHasItems(t *testing.T) {
	// Upstream lists say "items": [] when nothing matches, never null.
	s := newConfigMapStore(t, sharedClient)
	l := &corev1.ConfigMapList{}
	if err := s.List(testCtx(t), "/configmaps/nothing-here", storage.ListOptions{}, l); err != nil {
		t.Fatalf("list: %v", err)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"items":[]`) {
		t.Errorf("empty list encodes as %s, want \"items\":[]", b)
	}
}

func TestListIntoPointerItems(t *testing.T) {
	// Lists whose Items are pointers (unusual, but allowed by meta) work too.
	s := newConfigMapStore(t, sharedClient)
	mustCreate(t, s, configMap("ns", "a", nil, nil))
	l := &ptrList{}
	if err := s.List(testCtx(t), "/configmaps", storage.ListOptions{}, l); err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Errorf("items = %v, want [a]", l.Items)
	}
}

type ptrList struct {
	corev1.ConfigMapList `json:",inline"`
	Items                []*corev1.ConfigMap
}

func (l *ptrList) DeepCopyObject() runtime.Object { c := *l; return &c }
