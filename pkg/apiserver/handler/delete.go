package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// deleteOptions reads DeleteOptions from the body or, when there is no
// body, from the query: as upstream, a body wins and the query is then not
// read at all.
func (h *Handler) deleteOptions(r *http.Request) (*metav1.DeleteOptions, bool, error) {
	opts := &metav1.DeleteOptions{}
	body, mt, err := readBody(r, objectTypes)
	if err != nil {
		return nil, false, err
	}
	if len(body) > 0 {
		if mt == protobufType {
			gvk := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
			_, _, err = h.proto.Decode(body, &gvk, opts)
		} else {
			err = json.Unmarshal(body, opts)
		}
		if err != nil {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: %v", err))
		}
	} else {
		q := r.URL.Query()
		if err := metav1.Convert_url_Values_To_v1_DeleteOptions(&q, opts, nil); err != nil {
			return nil, false, apierrors.NewBadRequest(err.Error())
		}
	}
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, false, optionsInvalid("DeleteOptions", errs)
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		zero := int64(0) // upstream treats a negative grace period as "now"
		opts.GracePeriodSeconds = &zero
	}
	return opts, len(opts.DryRun) > 0, nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	opts, dry, err := h.deleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, gone, err := h.deleteOne(r, st, ns, name, nil, opts, dry)
	if err != nil {
		writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if !gone && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if gone && !st.ReturnDeletedObject {
		m := metaOf(out)
		out = &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
			Name: m.GetName(), Group: st.GroupVersion.Group, Kind: st.Name, UID: m.GetUID(),
		}}
	}
	h.respond(w, r, st, code, out)
}

// finalizers the garbage collector acts on.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

// wantedFinalizers returns the finalizers after applying the propagation
// policy: Orphan and Foreground add the garbage collector's finalizer.
func wantedFinalizers(current []string, opts *metav1.DeleteOptions) []string {
	policy := metav1.DeletePropagationBackground
	explicit := false
	if opts.PropagationPolicy != nil {
		policy, explicit = *opts.PropagationPolicy, true
	} else if opts.OrphanDependents != nil {
		explicit = true
		if *opts.OrphanDependents {
			policy = metav1.DeletePropagationOrphan
		}
	}
	set := sets.New(current...)
	if !explicit {
		return current
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		set.Delete(finalizerForeground)
		set.Insert(finalizerOrphan)
	case metav1.DeletePropagationForeground:
		set.Delete(finalizerOrphan)
		set.Insert(finalizerForeground)
	default:
		set.Delete(finalizerOrphan, finalizerForeground)
	}
	out := make([]string, 0, set.Len())
	for _, f := range current {
		if set.Has(f) {
			out = append(out, f)
			set.Delete(f)
		}
	}
	return append(out, sets.List(set)...)
}

// deleteOne deletes or marks one object, retrying on concurrent writes. It
// returns the object's last state and whether it is gone (or, with dry,
// would be). known, when not nil, is the object as its caller has just
// written it: the first attempt starts from it instead of reading it again
// (a write since then fails the attempt's resourceVersion precondition,
// and the next attempt reads).
func (h *Handler) deleteOne(r *http.Request, st *Store, ns, name string, known runtime.Object, opts *metav1.DeleteOptions, dry bool) (runtime.Object, bool, error) {
	ctx := r.Context()
	key := st.Key(ns, name)
	gr := st.groupResource()
	for {
		cur := known
		known = nil
		if cur == nil {
			cur = st.New()
			if err := st.Storage.Get(ctx, key, cur); err != nil {
				return nil, false, storageError(err, gr, name)
			}
		}
		if err := st.checkPreconditions(opts.Preconditions, cur); err != nil {
			return nil, false, err
		}
		a := h.attrs(r, st, admission.Delete, "", ns, name, nil, cur, dry)
		a.Options = func() runtime.Object { return opts }
		if err := h.admission.Validate(ctx, a); err != nil {
			return nil, false, err
		}
		obj := cur.DeepCopyObject()
		m := metaOf(obj)
		var grace int64
		if st.Deletion != nil {
			grace = st.Deletion.GracePeriod(cur, opts.GracePeriodSeconds)
		}
		m.SetFinalizers(wantedFinalizers(m.GetFinalizers(), opts))
		waitSpec := st.Deletion != nil && st.Deletion.PrepareForDelete(obj)
		deleteNow := grace == 0 && len(m.GetFinalizers()) == 0 && !waitSpec
		if m.GetDeletionTimestamp() == nil && m.GetGeneration() > 0 {
			// As upstream: being deleted changes what the object's
			// controller should do, so observers comparing
			// observedGeneration see that it has not caught up yet.
			m.SetGeneration(m.GetGeneration() + 1)
		}
		if cg := m.GetDeletionGracePeriodSeconds(); m.GetDeletionTimestamp() == nil || cg == nil || grace < *cg {
			ts := metav1.NewTime(h.clock.Now().Add(time.Duration(grace) * time.Second))
			m.SetDeletionTimestamp(&ts)
			m.SetDeletionGracePeriodSeconds(&grace)
		} else {
			deleteNow = *cg == 0 && len(m.GetFinalizers()) == 0 && !waitSpec
		}
		if dry {
			return obj, deleteNow, nil
		}
		rv := metaOf(cur).GetResourceVersion()
		uid := metaOf(cur).GetUID()
		out := st.New()
		var err error
		if deleteNow {
			err = st.Storage.Delete(ctx, key, out, &storage.Preconditions{UID: &uid, ResourceVersion: &rv}, nil)
		} else {
			err = st.Storage.GuaranteedUpdate(ctx, key, out, false, &storage.Preconditions{UID: &uid, ResourceVersion: &rv},
				func(runtime.Object) (runtime.Object, error) { return obj, nil })
		}
		if errors.Is(err, storage.ErrConflict) {
			continue // someone wrote in between; decide again on the new state
		}
		if err != nil {
			return nil, false, storageError(err, gr, name)
		}
		if deleteNow {
			release(ctx, st, out)
		}
		if deleteNow && st.Deletion != nil {
			// A kind deleted gracefully answers, as upstream's, with the
			// object as marked for deletion (grace period 0), not as stored.
			return obj, true, nil
		}
		return out, deleteNow, nil
	}
}

// checkPreconditions refuses a delete whose uid or resourceVersion
// precondition does not hold, in upstream's words (which name the kind).
func (st *Store) checkPreconditions(p *metav1.Preconditions, cur runtime.Object) error {
	if p == nil {
		return nil
	}
	m := metaOf(cur)
	gvk := st.GroupVersionKind()
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(gr, m.GetName(), fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(gr, m.GetName(), fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

func (h *Handler) deleteCollection(w http.ResponseWriter, r *http.Request, st *Store, ns string) {
	opts, dry, err := h.deleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := h.parseListParams(r, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list := st.NewList()
	if err := st.Storage.List(r.Context(), st.collectionKey(ns), p.opts, list); err != nil {
		writeError(w, r, storageError(err, st.groupResource(), ""))
		return
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, item := range items {
		m := metaOf(item)
		if _, _, err := h.deleteOne(r, st, m.GetNamespace(), m.GetName(), nil, opts, dry); err != nil && !apierrors.IsNotFound(err) {
			writeError(w, r, err)
			return
		}
	}
	// As upstream: the answer lists what was selected for deletion.
	h.respond(w, r, st, http.StatusOK, list)
}
