package handler

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// decodeObject decodes a JSON body into st's type, applies defaults, and
// handles unknown fields as the request's fieldValidation asks: Strict
// refuses them (400), Warn (the default) answers with Warning headers,
// Ignore drops them silently.
// Warnings go through the request info, which sends each once however
// often a retried patch decodes.
func (h *Handler) decodeObject(r *http.Request, st *Store, body []byte, mediaType, mode string) (runtime.Object, error) {
	gvk := st.GroupVersionKind()
	var dec runtime.Decoder = h.strict
	if mediaType == protobufType {
		dec = h.proto
	}
	obj, got, err := dec.Decode(body, &gvk, st.New())
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, undecodable(got, gvk, body, err)
		}
		switch mode {
		case "Strict":
			return nil, undecodable(got, gvk, body, err)
		case "Warn":
			info, _ := request.InfoFrom(r.Context())
			if se, ok := err.(interface{ Errors() []error }); ok {
				for _, e := range se.Errors() {
					info.Warn(e.Error())
				}
			} else {
				info.Warn(err.Error())
			}
		}
	}
	if got == nil || *got != gvk {
		gotStr := "<none>"
		if got != nil {
			gotStr = got.GroupVersion().String() + ", Kind=" + got.Kind
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is of kind %s, but the endpoint %s serves %s, Kind=%s",
			gotStr, r.URL.Path, gvk.GroupVersion().String(), gvk.Kind))
	}
	st.Strategy.Default(obj)
	return obj, nil
}

// undecodable is the 400 of a body that does not decode as gvk, worded as
// upstream's (kubectl users see it after "error when creating").
func undecodable(got *schema.GroupVersionKind, gvk schema.GroupVersionKind, body []byte, err error) error {
	if got != nil && got.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", got.Kind, got.Version, gvk.Kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", gvk.Kind, err, bodySummary(body)))
}

// bodySummary shows the start of a body in an error: JSON as text, anything
// else in hex.
func bodySummary(body []byte) string {
	const maxLen = 30
	if len(body) == 0 {
		return "<empty>"
	}
	head, more := body, ""
	if len(body) > maxLen {
		head, more = body[:maxLen], " ..."
	}
	if body[0] == '{' {
		return string(head) + more
	}
	return hex.EncodeToString(head) + more
}

// writeOptions reads the query options of a create (POST), update (PUT) or
// patch of media type mt: whether it is a dry run, and how unknown fields
// are handled (fieldValidation, Warn unless set). Bad values are a 422
// naming the options kind, as upstream's
// `CreateOptions.meta.k8s.io "" is invalid: ...`.
func writeOptions(r *http.Request, mt string) (writeRequest, error) {
	q := r.URL.Query()
	var kind string
	var dryRun []string
	var wr writeRequest
	var errs field.ErrorList
	switch r.Method {
	case http.MethodPost:
		opts := &metav1.CreateOptions{}
		if err := metav1.Convert_url_Values_To_v1_CreateOptions(&q, opts, nil); err != nil {
			return wr, apierrors.NewBadRequest(err.Error())
		}
		kind, dryRun, wr.fieldValidation, wr.fieldManager, errs = "CreateOptions", opts.DryRun, opts.FieldValidation, opts.FieldManager, metav1validation.ValidateCreateOptions(opts)
	case http.MethodPatch:
		opts := &metav1.PatchOptions{}
		if err := metav1.Convert_url_Values_To_v1_PatchOptions(&q, opts, nil); err != nil {
			return wr, apierrors.NewBadRequest(err.Error())
		}
		kind, dryRun, wr.fieldValidation, wr.fieldManager, errs = "PatchOptions", opts.DryRun, opts.FieldValidation, opts.FieldManager, metav1validation.ValidatePatchOptions(opts, types.PatchType(mt))
		wr.force = opts.Force != nil && *opts.Force
	default:
		opts := &metav1.UpdateOptions{}
		if err := metav1.Convert_url_Values_To_v1_UpdateOptions(&q, opts, nil); err != nil {
			return wr, apierrors.NewBadRequest(err.Error())
		}
		kind, dryRun, wr.fieldValidation, wr.fieldManager, errs = "UpdateOptions", opts.DryRun, opts.FieldValidation, opts.FieldManager, metav1validation.ValidateUpdateOptions(opts)
	}
	if len(errs) > 0 {
		return wr, optionsInvalid(kind, errs)
	}
	if wr.fieldValidation == "" {
		wr.fieldValidation = metav1.FieldValidationWarn
	}
	wr.dry = len(dryRun) > 0
	return wr, nil
}

// optionsInvalid is upstream's 422 for bad request options.
func optionsInvalid(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

// validateName checks a name as the resource requires.
func (s *Store) validateName(name string, prefix bool) []string {
	if s.ValidateName != nil {
		return s.ValidateName(name, prefix)
	}
	return apivalidation.NameIsDNSSubdomain(name, prefix)
}

func (s *Store) validateMeta(obj runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	fldPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaAccessor(m, s.Namespaced, s.validateName, fldPath)
	return append(errs, kubeFinalizers(m.GetFinalizers(), fldPath.Child("finalizers"))...)
}

// kubeFinalizers refuses, as upstream's object validation does, a
// finalizer that is neither one Kubernetes itself handles nor
// domain-qualified.
func kubeFinalizers(finalizers []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		errs = append(errs, validation.KubeFinalizerName(f, fldPath.Index(i),
			string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)...)
	}
	return errs
}

func invalid(st *Store, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(st.GroupVersionKind().GroupKind(), name, errs)
}

func conflict(st *Store, name string) error {
	return apierrors.NewConflict(st.groupResource(), name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// generateNameSuffix returns the 5 random characters upstream appends to a
// generateName prefix.
func generateNameSuffix(rnd func(n int) int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b strings.Builder
	for range 5 {
		b.WriteByte(alphabet[rnd(len(alphabet))])
	}
	return b.String()
}

// metaOf is meta.Accessor for objects known to have ObjectMeta.
func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("registered type %T has no ObjectMeta: %v", obj, err))
	}
	return m
}

// writeRequest is what a write reads before it does anything: its body, in
// one of the media types it accepts, and its dryRun and fieldValidation.
type writeRequest struct {
	body            []byte
	mt              string
	dry             bool
	fieldValidation string
	// fieldManager is the query's; manager() is the write's.
	fieldManager string
	// force is an apply's: it takes the fields it conflicts on.
	force bool
	// userAgent names the manager of a write that names none.
	userAgent string
}

// manager is who the write's fields are recorded for.
func (wr writeRequest) manager() string {
	return fieldmanager.ManagerOrUserAgent(wr.fieldManager, wr.userAgent)
}

func readWrite(r *http.Request, accepted []string) (writeRequest, error) {
	body, mt, err := readBody(r, accepted)
	if err != nil {
		return writeRequest{}, err
	}
	wr, err := writeOptions(r, mt)
	if err != nil {
		return writeRequest{}, err
	}
	wr.body, wr.mt, wr.userAgent = body, mt, r.UserAgent()
	return wr, nil
}
