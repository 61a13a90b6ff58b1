package handler

import (
	"errors"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// scaleStore describes the Scale kind for answers (it is stored nowhere):
// with it a scale is answered as a Table or as metadata when asked, with
// upstream's columns for `kubectl get --subresource=scale`.
func scaleStore(c clock.PassiveClock) *Store {
	cols := []metav1.TableColumnDefinition{
		// Unlike most tables, upstream's gives Name no "name" format.
		{Name: "Name", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		tableutil.Column("Desired", "integer", 0, autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]),
		tableutil.Column("Available", "integer", 0, autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]),
		tableutil.AgeColumn(),
	}
	row := func(s *autoscalingv1.Scale) []interface{} {
		return []interface{}{s.Name, int64(s.Spec.Replicas), int64(s.Status.Replicas), tableutil.Age(s.CreationTimestamp, c.Now())}
	}
	return &Store{Resource: &registry.Resource{GroupVersion: scaleGVK.GroupVersion(), Kind: scaleGVK.Kind, Table: tableutil.New(cols, row)}}
}

// scaleOf renders the autoscaling/v1 Scale of a scalable object.
func (st *Store) scaleOf(obj runtime.Object) *autoscalingv1.Scale {
	m := metaOf(obj)
	spec, status, selector := st.Scale.Scale(obj)
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: scaleGVK.GroupVersion().String(), Kind: scaleGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}
}

// serveScale serves GET, PUT and PATCH on the scale subresource.
func (h *Handler) serveScale(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	ctx := r.Context()
	gr := st.groupResource()
	switch r.Method {
	case http.MethodGet:
		obj := st.New()
		if err := st.Storage.Get(ctx, st.Key(ns, name), obj); err != nil {
			writeError(w, r, storageError(err, gr, name))
			return
		}
		h.writeScale(w, r, st.scaleOf(obj))
		return
	case http.MethodPut, http.MethodPatch:
	default:
		writeError(w, r, MethodNotAllowed(r))
		return
	}
	accepted := objectTypes
	if r.Method == http.MethodPatch {
		accepted = patchTypes
	}
	wr, err := readWrite(r, accepted)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, mt, dry := wr.body, wr.mt, wr.dry
	// The patch body is read once, not on every attempt of the update; one
	// that is not JSON of its patch type is refused, in the words of any
	// other patch, once the object is read (a missing one is a 404 first).
	var patch *parsedPatch
	var applied *unstructured.Unstructured
	switch {
	case mt == applyPatchType:
		if h.fields == nil {
			writeError(w, r, unsupportedMediaType(patchTypes))
			return
		}
		if applied, err = scaleApplied(body, st); err != nil {
			writeError(w, r, err)
			return
		}
	case r.Method == http.MethodPatch:
		patch = parsePatch(mt, body, wr.fieldValidation)
	}
	out := st.New()
	var result runtime.Object
	err = st.Storage.GuaranteedUpdate(ctx, st.Key(ns, name), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		var obj runtime.Object
		if applied != nil {
			var err error
			if obj, err = h.fields.Apply(st.GroupVersionKind(), fieldmanager.Scale, cur, applied.DeepCopy(), wr.fieldManager, wr.force); err != nil {
				return nil, applyError(err)
			}
			if err := checkURLName(st, obj, ns, name); err != nil {
				return nil, err
			}
		} else {
			want, err := h.decodeScale(mt, body, patch, st.scaleOf(cur))
			if err != nil {
				return nil, err
			}
			if err := checkURLName(st, want, ns, name); err != nil {
				return nil, err
			}
			if rv := want.ResourceVersion; rv != "" && rv != metaOf(cur).GetResourceVersion() {
				return nil, conflict(st, name)
			}
			if want.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(scaleGVK.GroupKind(), name, field.ErrorList{
					field.Invalid(field.NewPath("spec", "replicas"), want.Spec.Replicas, "must be greater than or equal to 0")})
			}
			obj = cur.DeepCopyObject()
			st.Scale.SetReplicas(obj, want.Spec.Replicas)
			if h.fields != nil {
				obj = h.fields.Update(st.GroupVersionKind(), fieldmanager.Scale, cur, obj, wr.manager())
			}
		}
		st.Strategy.PrepareForUpdate(ctx, obj, cur)
		if errs := st.Strategy.ValidateUpdate(ctx, obj, cur); len(errs) > 0 {
			return nil, invalid(st, name, errs)
		}
		keepManagedFieldsTimes(obj, cur)
		if dry {
			result = obj
			return nil, errDryRun{obj}
		}
		return obj, nil
	})
	if _, ok := err.(errDryRun); ok {
		h.writeScale(w, r, st.scaleOf(result))
		return
	}
	if err != nil {
		writeError(w, r, storageError(err, gr, name))
		return
	}
	h.writeScale(w, r, st.scaleOf(out))
}

// decodeScale reads the Scale a PUT sends, or, with patch, the Scale the
// patch makes of cur.
func (h *Handler) decodeScale(mt string, body []byte, patch *parsedPatch, cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	data := body
	if patch != nil {
		// Scale has no lists, so a strategic merge patch is a merge patch.
		var err error
		data, err = h.applyJSON(patch, cur)
		var applyErr errPatchApply
		if errors.As(err, &applyErr) {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch could not be applied: %v", applyErr.err))
		}
		if err != nil {
			return nil, err
		}
	}
	scale := &autoscalingv1.Scale{}
	var dec runtime.Decoder = h.json
	if patch == nil && mt == protobufType {
		dec = h.proto
	}
	if _, _, err := dec.Decode(data, &scaleGVK, scale); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as Scale: %v", err))
	}
	return scale, nil
}

func (h *Handler) writeScale(w http.ResponseWriter, r *http.Request, scale *autoscalingv1.Scale) {
	h.respond(w, r, h.scale, http.StatusOK, scale)
}

// scaleApplied turns a server-side apply of a Scale into the apply of the
// parent's spec.replicas (the path of every scale kube-lite serves), which
// the scale subresource's manager then owns, as upstream's translation of
// scale entries does.
func scaleApplied(body []byte, st *Store) (*unstructured.Unstructured, error) {
	scale := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(body, &scale.Object); err != nil {
		return nil, badRequestf("error decoding YAML: %v", err)
	}
	if gvk := scale.GroupVersionKind(); gvk != scaleGVK {
		return nil, badRequestf("invalid object type: %v", gvk)
	}
	if scale.GetManagedFields() != nil {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	gvk := st.GroupVersionKind()
	parent := &unstructured.Unstructured{Object: map[string]interface{}{}}
	parent.SetGroupVersionKind(gvk)
	parent.SetName(scale.GetName())
	if replicas, ok, _ := unstructured.NestedFieldNoCopy(scale.Object, "spec", "replicas"); ok {
		if err := unstructured.SetNestedField(parent.Object, replicas, "spec", "replicas"); err != nil {
			return nil, badRequestf("spec.replicas: %v", err)
		}
	}
	return parent, nil
}
