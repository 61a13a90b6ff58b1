package handler

import (
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

func (h *Handler) get(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	obj := st.New()
	if err := st.Storage.Get(r.Context(), st.Key(ns, name), obj); err != nil {
		writeError(w, r, storageError(err, st.groupResource(), name))
		return
	}
	h.respond(w, r, st, http.StatusOK, obj)
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

func (h *Handler) parseListParams(r *http.Request, st *Store) (listParams, error) {
	q := r.URL.Query()
	var p listParams
	var errs field.ErrorList
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
	if p.opts.ResourceVersion != "" {
		if _, err := strconv.ParseUint(p.opts.ResourceVersion, 10, 64); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("resourceVersion"), p.opts.ResourceVersion, "must be a non-negative integer"))
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, field.Invalid(field.NewPath("limit"), s, "must be a non-negative integer"))
		}
		p.opts.Limit = n
	}
	p.opts.Continue = q.Get("continue")
	p.watch = isTrue(q.Get("watch"))
	p.opts.AllowWatchBookmarks = isTrue(q.Get("allowWatchBookmarks"))
	p.sendInitialEvents = isTrue(q.Get("sendInitialEvents"))
	p.noInitialEvents = q.Has("sendInitialEvents") && !p.sendInitialEvents
	if s := q.Get("timeoutSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, field.Invalid(field.NewPath("timeoutSeconds"), s, "must be a non-negative integer"))
		}
		p.timeoutSeconds = n
	}
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
	errs = append(errs, metainternalversionvalidation.ValidateListOptions(lo, true)...)
	if p.watch && p.sendInitialEvents && !p.opts.AllowWatchBookmarks {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is only supported on watch requests with allowWatchBookmarks=true"))
	}
	if len(errs) > 0 {
		return p, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if p.opts.Continue != "" && p.opts.ResourceVersion != "" && p.opts.ResourceVersion != "0" {
		// A continue token pins the revision itself.
		return p, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return p, nil
}

func isTrue(s string) bool { return s == "1" || s == "true" }

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
	if err := st.Storage.List(r.Context(), st.collectionKey(ns), p.opts, out); err != nil {
		writeError(w, r, storageError(err, st.groupResource(), ""))
		return
	}
	h.respond(w, r, st, http.StatusOK, out)
}

// watchOne serves the deprecated GET /.../name?watch=1 form.
func (h *Handler) watchOne(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	p, err := h.parseListParams(r, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.serveWatch(w, r, st, st.Key(ns, name), false, p)
}
