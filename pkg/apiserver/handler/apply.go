package handler

import (
	"errors"
	"net/http"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// apply serves server-side apply: the body is the manager's whole
// configuration of the object, merged into it by field ownership. Applying
// to an object that does not exist creates it, as upstream does.
func (h *Handler) apply(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, ep endpoint, wr writeRequest) {
	if h.fields == nil {
		writeError(w, r, unsupportedMediaType(patchTypes))
		return
	}
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(wr.body, &applied.Object); err != nil {
		writeError(w, r, badRequestf("error decoding YAML: %v", err))
		return
	}
	gvk, fep := st.GroupVersionKind(), fieldEndpoint(ep)
	next := func(cur runtime.Object) (runtime.Object, error) {
		// The merge keeps parts of what it is given: every attempt
		// starts from the body.
		obj, err := h.fields.Apply(gvk, fep, cur, applied.DeepCopy(), wr.fieldManager, wr.force)
		if err != nil {
			return nil, applyError(err)
		}
		if err := strictApply(r, wr); err != nil {
			return nil, err
		}
		if err := checkURLName(st, obj, ns, name); err != nil {
			return nil, err
		}
		return obj, nil
	}
	out, dryRan, err := h.storeUpdate(r, st, ns, name, ep, wr, nil, next)
	if errors.Is(err, storage.ErrKeyNotFound) && ep == mainEndpoint {
		obj, err := next(st.New())
		if err != nil {
			writeError(w, r, err)
			return
		}
		if h.createOnUpdate(w, r, st, ns, name, obj, wr, true) {
			return
		}
		// Created meanwhile by someone else: apply to theirs.
		out, dryRan, err = h.storeUpdate(r, st, ns, name, ep, wr, nil, next)
		h.answerUpdate(w, r, st, ns, name, out, dryRan, err)
		return
	}
	h.answerUpdate(w, r, st, ns, name, out, dryRan, err)
}

// applyError keeps the field manager's API errors (409 conflicts, 400s)
// and makes the rest, a body the kind's schema does not describe, a 400 in
// the field manager's words: the client's error, not the server's
// (upstream answers a 500, kubernetes/kubernetes#139253).
func applyError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}

// strictApply reports an apply body's duplicate fields as the request's
// fieldValidation asks, in upstream's words.
func strictApply(r *http.Request, wr writeRequest) error {
	if wr.fieldValidation != metav1.FieldValidationStrict && wr.fieldValidation != metav1.FieldValidationWarn {
		return nil
	}
	err := yaml.UnmarshalStrict(wr.body, &map[string]interface{}{})
	if err == nil {
		return nil
	}
	if wr.fieldValidation == metav1.FieldValidationStrict {
		return badRequestf("error strict decoding YAML: %v", err)
	}
	info, _ := request.InfoFrom(r.Context())
	info.Warn(err.Error())
	return nil
}

// trackUpdate records an update's changes from cur to obj as manager's.
func (h *Handler) trackUpdate(st *Store, ep endpoint, cur, obj runtime.Object, manager string) runtime.Object {
	if h.fields == nil {
		return obj
	}
	return h.fields.Update(st.GroupVersionKind(), fieldEndpoint(ep), cur, obj, manager)
}

// keepManagedFieldsTimes gives an update that changes nothing but the
// times of managedFields entries the old times back, as upstream does: a
// write of the same object then stays no write at all (no new
// resourceVersion, no watch event).
func keepManagedFieldsTimes(obj, cur runtime.Object) {
	nm, cm := metaOf(obj), metaOf(cur)
	newFields, oldFields := nm.GetManagedFields(), cm.GetManagedFields()
	if len(newFields) == 0 || len(newFields) != len(oldFields) {
		return
	}
	timesChanged := false
	for i := range newFields {
		n, o := newFields[i], oldFields[i]
		if n.Manager != o.Manager || n.Operation != o.Operation || n.APIVersion != o.APIVersion ||
			n.Subresource != o.Subresource || n.FieldsType != o.FieldsType || !apiequality.Semantic.DeepEqual(n.FieldsV1, o.FieldsV1) {
			return
		}
		if !n.Time.Equal(o.Time) {
			timesChanged = true
		}
	}
	if !timesChanged {
		return
	}
	// Compared as whole objects with the old entries: objects decoded
	// from storage lack apiVersion and kind.
	nm.SetManagedFields(oldFields)
	curKind := cur.GetObjectKind().GroupVersionKind()
	cur.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	same := apiequality.Semantic.DeepEqual(obj, cur)
	cur.GetObjectKind().SetGroupVersionKind(curKind)
	if !same {
		nm.SetManagedFields(newFields)
	}
}
