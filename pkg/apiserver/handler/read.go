package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

func (h *Handler) get(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	rv := r.URL.Query().Get("resourceVersion")
	if err := checkResourceVersion(rv); err != nil {
		writeError(w, r, err)
		return
	}
	need, _ := strconv.ParseInt(rv, 10, 64)
	obj := st.New()
	err := st.Storage.Get(r.Context(), st.Key(ns, name), obj)
	// The object read is at least as new as a resourceVersion it reaches;
	// otherwise the store as a whole must have reached it, as upstream's
	// "not older than" read.
	if need > 0 && (err != nil || objectRevision(obj) < need) {
		if cur, ok := h.waitRevision(r.Context(), st, need); !ok {
			writeError(w, r, storageError(tooLargeRevision(need, cur), st.groupResource(), name))
			return
		}
		obj = st.New()
		err = st.Storage.Get(r.Context(), st.Key(ns, name), obj)
	}
	if err != nil {
		writeError(w, r, storageError(err, st.groupResource(), name))
		return
	}
	h.respond(w, r, st, http.StatusOK, obj)
}

// freshnessBound is how long a read at a resourceVersion the store has not
// reached waits for it, as upstream's watch cache does, before the 504 Too
// large resource version.
const freshnessBound = 3 * time.Second

// revisionPoll is how often such a read looks at the store's revision.
const revisionPoll = 50 * time.Millisecond

// waitRevision waits, up to freshnessBound, until the store's revision is
// at least need; it returns the last revision seen and whether it was.
func (h *Handler) waitRevision(ctx context.Context, st *Store, need int64) (int64, bool) {
	bound := h.clock.NewTimer(freshnessBound)
	defer bound.Stop()
	for {
		cur, err := st.Storage.CurrentRevision(ctx)
		if err == nil && cur >= need {
			return cur, true
		}
		select {
		case <-ctx.Done():
			return cur, false
		case <-bound.C():
			return cur, false
		case <-h.clock.After(revisionPoll):
		}
	}
}

// tooLargeRevision is storage's error for a read at a revision not reached.
func tooLargeRevision(need, cur int64) error {
	return storage.NewError(storage.ErrTooLargeResourceVers, "", fmt.Sprintf("Too large resource version: %d, current: %d", need, cur))
}

// objectRevision is the resourceVersion of an object read from storage.
func objectRevision(obj runtime.Object) int64 {
	n, _ := strconv.ParseInt(metaOf(obj).GetResourceVersion(), 10, 64)
	return n
}

// listParams are the query parameters of a list or watch.
type listParams struct {
	opts              storage.ListOptions
	watch             bool
	timeoutSeconds    int64
	sendInitialEvents bool
	// noInitialEvents: sendInitialEvents=false, which makes a watch from
	// "" or "0" start at the current revision without ADDED events.
	noInitialEvents bool
}

// parseListParams reads a list or watch's query in upstream's order: the
// parameters' types first (a 400 with strconv's words, as upstream's query
// conversion), then the selectors, then the options' rules (a 422), and
// last the resourceVersion, which upstream's storage parses (a 400 for a
// list, a 500 for a watch).
func (h *Handler) parseListParams(r *http.Request, st *Store) (listParams, error) {
	q := r.URL.Query()
	var p listParams
	var err error
	info, _ := request.InfoFrom(r.Context())
	p.watch = request.QueryBool(q, "watch") || (info != nil && info.WatchPath)
	p.opts.AllowWatchBookmarks = request.QueryBool(q, "allowWatchBookmarks")
	if p.timeoutSeconds, err = queryInt(q, "timeoutSeconds"); err != nil {
		return p, err
	}
	// A limit of zero or less asks for everything, as upstream's.
	if p.opts.Limit, err = queryInt(q, "limit"); err != nil {
		return p, err
	}
	p.opts.Limit = max(p.opts.Limit, 0)
	p.sendInitialEvents = request.QueryBool(q, "sendInitialEvents")
	p.noInitialEvents = q.Has("sendInitialEvents") && !p.sendInitialEvents
	if s := q.Get("labelSelector"); s != "" {
		sel, err := labels.Parse(s)
		if err != nil {
			return p, badRequestf("%v", err)
		}
		p.opts.Predicate.Label = sel
	}
	if s := q.Get("fieldSelector"); s != "" {
		sel, err := fields.ParseSelector(s)
		if err != nil {
			return p, badRequestf("%v", err)
		}
		allowed := st.selectableFields()
		for _, req := range sel.Requirements() {
			if _, ok := allowed[req.Field]; ok {
				continue
			}
			// Upstream's words differ by kind: those with fields of their
			// own (pods, nodes, ...) have a conversion that says this; the
			// rest name the two fields every object has.
			if st.Attrs != nil {
				return p, badRequestf("field label not supported: %s", req.Field)
			}
			return p, badRequestf("%q is not a known field selector: only %q, %q", req.Field, "metadata.name", "metadata.namespace")
		}
		p.opts.Predicate.Field = sel
	}
	p.opts.Predicate.GetAttrs = st.ObjectAttrs
	p.opts.ResourceVersion = q.Get("resourceVersion")
	p.opts.Continue = q.Get("continue")
	match := q.Get("resourceVersionMatch")
	p.opts.Exact = match == "Exact"
	// resourceVersionMatch and sendInitialEvents are checked by upstream's
	// own rules (kube-lite serves watch lists).
	lo := &metainternalversion.ListOptions{
		Watch: p.watch, ResourceVersion: p.opts.ResourceVersion, Continue: p.opts.Continue,
		ResourceVersionMatch: metav1.ResourceVersionMatch(match),
	}
	if q.Has("sendInitialEvents") {
		lo.SendInitialEvents = &p.sendInitialEvents
	}
	errs := metainternalversionvalidation.ValidateListOptions(lo, true)
	if p.watch && p.sendInitialEvents && !p.opts.AllowWatchBookmarks {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is only supported on watch requests with allowWatchBookmarks=true"))
	}
	if len(errs) > 0 {
		return p, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if err := checkResourceVersion(p.opts.ResourceVersion); err != nil {
		if p.watch {
			return p, err
		}
		return p, badRequestf("invalid resource version: %s", err.ErrStatus.Message)
	}
	if p.opts.Continue != "" && p.opts.ResourceVersion != "" && p.opts.ResourceVersion != "0" {
		// A continue token pins the revision itself.
		return p, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return p, nil
}

// checkResourceVersion is upstream storage's 500 for a resourceVersion
// that is not a revision (a get or a watch; a list makes it a 400).
func checkResourceVersion(rv string) *apierrors.StatusError {
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		return failure(http.StatusInternalServerError, metav1.StatusReasonUnknown, field.Invalid(field.NewPath("resourceVersion"), rv, err.Error()).Error())
	}
	return nil
}

// queryInt reads an integer query parameter (0 when absent); one that is
// not an integer is upstream's 400 naming strconv's error.
func queryInt(q url.Values, name string) (int64, error) {
	v := q[name]
	if len(v) == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(err.Error())
	}
	return n, nil
}

// selectableFields are the field labels a field selector may name.
func (s *Store) selectableFields() fields.Set {
	_, fs, err := s.ObjectAttrs(s.New())
	if err != nil {
		return fields.Set{"metadata.name": "", "metadata.namespace": ""}
	}
	fs["metadata.namespace"] = ""
	return fs
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, st *Store, ns string) {
	p, err := h.parseListParams(r, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if p.watch {
		key, recursive := st.collectionKey(ns), true
		if f := p.opts.Predicate.Field; f != nil && (ns != "" || !st.Namespaced) {
			if name, ok := f.RequiresExactMatch("metadata.name"); ok {
				key, recursive = st.Key(ns, name), false
			}
		}
		h.serveWatch(w, r, st, key, recursive, p)
		return
	}
	out := st.NewList()
	err = st.Storage.List(r.Context(), st.collectionKey(ns), p.opts, out)
	if errors.Is(err, storage.ErrTooLargeResourceVers) {
		// Upstream's watch cache waits to reach the revision before it
		// gives up; a write landing meanwhile makes the list succeed.
		need, _ := strconv.ParseInt(p.opts.ResourceVersion, 10, 64)
		if cur, ok := h.waitRevision(r.Context(), st, need); ok {
			out = st.NewList()
			err = st.Storage.List(r.Context(), st.collectionKey(ns), p.opts, out)
		} else {
			err = tooLargeRevision(need, cur)
		}
	}
	if err != nil {
		writeError(w, r, storageError(err, st.groupResource(), ""))
		return
	}
	h.respond(w, r, st, http.StatusOK, out)
}

// watchOne serves the deprecated GET /watch/.../{name} form: a watch of the
// collection selecting metadata.name, as upstream's, which refuses a field
// selector that does not select that name.
func (h *Handler) watchOne(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	p, err := h.parseListParams(r, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if f := p.opts.Predicate.Field; f != nil && !f.Empty() {
		if selected, ok := f.RequiresExactMatch("metadata.name"); !ok || selected != name {
			writeError(w, r, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name"))
			return
		}
	}
	h.serveWatch(w, r, st, st.Key(ns, name), false, p)
}
