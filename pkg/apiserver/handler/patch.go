package handler

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// parsedPatch is a patch body read once, before the update that may retry
// applying it.
type parsedPatch struct {
	mt   string
	raw  []byte
	jp   jsonpatch.Patch
	smp  map[string]interface{}
	mode string // fieldValidation: Strict, Warn or Ignore
	// strictErrs are the body's own duplicate fields (Strict and Warn
	// only): reported with the unknown fields of the patched object, as
	// upstream does.
	strictErrs []error
	// err is the body's decoding error, answered only once the object is
	// read: upstream decodes the patch when applying it, so patching an
	// object that does not exist is a 404 whatever the body.
	err error
}

// jsonPatchOp is what a JSON patch operation may hold: under Strict or
// Warn, other fields are reported as upstream's "json patch unknown
// field".
type jsonPatchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	From  string      `json:"from"`
	Value interface{} `json:"value"`
}

// parsePatch reads a body of one of patchTypes (readWrite refused any
// other) once, not on every attempt of the update, keeping its error for
// applying.
func parsePatch(mt string, body []byte, mode string) *parsedPatch {
	p := &parsedPatch{mt: mt, raw: body, mode: mode}
	p.err = p.decode()
	return p
}

// decode checks the body is JSON of its patch type; a syntax error is a
// 400, in upstream's words for each patch type and fieldValidation ("error
// decoding patch: ..." where the body is read strictly first).
func (p *parsedPatch) decode() error {
	mt, body := p.mt, p.raw
	checkStrict := p.mode == metav1.FieldValidationStrict || p.mode == metav1.FieldValidationWarn
	var err error
	switch mt {
	case "application/json-patch+json":
		if checkStrict {
			var ops []jsonPatchOp
			strictErrs, err := kjson.UnmarshalStrict(body, &ops)
			if err != nil {
				// The message names the Go type the operations are read
				// into: upstream's package is "handlers".
				msg := strings.ReplaceAll(err.Error(), "[]handler.jsonPatchOp", "[]handlers.jsonPatchOp")
				return badRequestf("error decoding patch: %s", msg)
			}
			for _, e := range strictErrs {
				p.strictErrs = append(p.strictErrs, fmt.Errorf("json patch %w", e))
			}
		}
		if p.jp, err = jsonpatch.DecodePatch(body); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	case "application/merge-patch+json":
		// Applied from its raw bytes: only read here to check it. Without
		// strict reading, what is no JSON object fails when applied.
		if checkStrict {
			var m map[string]interface{}
			if p.strictErrs, err = kjson.UnmarshalStrict(body, &m); err != nil {
				return badRequestf("error decoding patch: %v", err)
			}
		}
	case "application/strategic-merge-patch+json":
		if checkStrict {
			p.strictErrs, err = kjson.UnmarshalStrict(body, &p.smp)
		} else {
			err = kjson.UnmarshalCaseSensitivePreserveInts(body, &p.smp)
		}
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	return nil
}

// apply patches cur (of st's kind) and decodes the result. A result that is
// not a valid object, or has unknown or duplicate fields under Strict, is
// upstream's 422 on the field "patch", whose value is the patched object
// (JSON and merge patches) or the patch itself (strategic merge patches).
func (h *Handler) applyParsedPatch(r *http.Request, st *Store, name string, p *parsedPatch, cur runtime.Object) (runtime.Object, error) {
	if p.err != nil {
		return nil, p.err
	}
	gvk := st.GroupVersionKind()
	setKind(cur, gvk)
	var (
		obj     runtime.Object
		patched []byte
		err     error
	)
	strategic := p.mt == "application/strategic-merge-patch+json"
	if strategic {
		obj, err = applyStrategic(p, cur, st.New())
	} else if patched, err = h.applyJSON(p, cur); patched != nil {
		obj, _, err = h.strict.Decode(patched, &gvk, st.New())
	}
	// value is the 422's field value, formatted only when a 422 is
	// answered: not on every patch applied.
	value := func() string {
		if strategic {
			return fmt.Sprintf("%+v", p.smp)
		}
		return string(patched)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return nil, err
	}
	var applyErr errPatchApply
	if errors.As(err, &applyErr) {
		// No details: kubectl then prints the message ("The request is
		// invalid: ...") instead of only the object's name.
		return nil, failure(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			fmt.Sprintf("the patch could not be applied to %s %q: %v", st.groupResource(), name, applyErr.err))
	}
	strictErrs := p.strictErrs
	if err != nil {
		se, ok := runtime.AsStrictDecodingError(err)
		if !ok {
			return nil, patchInvalid(value(), err.Error())
		}
		strictErrs = append(strictErrs[:len(strictErrs):len(strictErrs)], se.Errors()...)
	}
	if len(strictErrs) > 0 {
		switch p.mode {
		case metav1.FieldValidationStrict:
			return nil, patchInvalid(value(), runtime.NewStrictDecodingError(strictErrs).Error())
		case metav1.FieldValidationWarn:
			info, _ := request.InfoFrom(r.Context())
			for _, e := range strictErrs {
				info.Warn(e.Error())
			}
		}
	}
	if got := obj.GetObjectKind().GroupVersionKind(); got != gvk {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is of kind %s, but the endpoint %s serves %s, Kind=%s",
			got.GroupVersion().String()+", Kind="+got.Kind, r.URL.Path, gvk.GroupVersion().String(), gvk.Kind))
	}
	st.Strategy.Default(obj)
	return obj, nil
}

// errPatchApply is a patch that does not apply to the object (a JSON patch
// test that fails, a path that does not exist, a malformed strategic merge
// directive).
type errPatchApply struct{ err error }

func (e errPatchApply) Error() string { return e.err.Error() }

// applyJSON applies a JSON or merge patch to cur's JSON.
func (h *Handler) applyJSON(p *parsedPatch, cur runtime.Object) (out []byte, err error) {
	if p.err != nil {
		return nil, p.err
	}
	curJSON, err := runtime.Encode(h.json, cur)
	if err != nil {
		return nil, fmt.Errorf("encode current object: %w", err)
	}
	// The patch library panics on some malformed patches (a replace of
	// the whole document without a value); that is the client's error.
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, errPatchApply{fmt.Errorf("malformed patch: %v", v)}
		}
	}()
	if p.mt == "application/json-patch+json" {
		out, err = p.jp.Apply(curJSON)
	} else {
		out, err = jsonpatch.MergePatch(curJSON, p.raw)
	}
	if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
		// Not a JSON object (or not JSON at all): upstream's 400
		// "Invalid JSON Patch".
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err != nil {
		return nil, errPatchApply{err}
	}
	return out, nil
}

// applyStrategic applies a strategic merge patch to cur as maps and
// converts the result into into, as upstream does: its errors then name
// the same conversions (cannot convert int64 to string).
func applyStrategic(p *parsedPatch, cur, into runtime.Object) (out runtime.Object, err error) {
	curMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, fmt.Errorf("convert current object: %w", err)
	}
	// The library panics on some malformed patches (a merge key that is a
	// list); that is the client's error.
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, errPatchApply{fmt.Errorf("malformed patch: %v", v)}
		}
	}()
	// The merge consumes its patch (a list under $setElementOrder is
	// deleted from it once merged), and an update applies the patch again
	// on every attempt: a retry after a conflict, or after a dry run or a
	// refusal met a cached object, would otherwise apply what is left.
	patched, err := strategicpatch.StrategicMergeMapPatch(curMap, runtime.DeepCopyJSON(p.smp), into)
	if err != nil {
		return nil, errPatchApply{err}
	}
	withUnknown := p.mode == metav1.FieldValidationStrict || p.mode == metav1.FieldValidationWarn
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, into, withUnknown); err != nil {
		return into, err
	}
	return into, nil
}

// patchInvalid is upstream's 422 for a patch whose result is not a valid
// object of the kind.
func patchInvalid(value, detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, detail)})
}
