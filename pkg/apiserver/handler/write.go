package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// endpoint says which part of an object an update may change.
type endpoint int

const (
	mainEndpoint endpoint = iota
	statusEndpoint
	finalizeEndpoint
)

// errDryRun stops a GuaranteedUpdate after validation, carrying the result.
type errDryRun struct{ obj runtime.Object }

func (errDryRun) Error() string { return "dry run" }

func (h *Handler) attrs(r *http.Request, st *Store, op admission.Operation, sub, ns, name string, obj, old runtime.Object, dry bool) *admission.Attributes {
	u, _ := request.UserFrom(r.Context())
	return &admission.Attributes{Operation: op, Resource: st.Resource, Subresource: sub, Namespace: ns, Name: name,
		Object: obj, OldObject: old, Options: func() runtime.Object { return admissionOptions(r, op) }, User: u, DryRun: dry}
}

// admissionOptions are the write's options as webhooks receive them, as
// upstream: CreateOptions for a create (a PUT that creates included),
// UpdateOptions for an update, a PATCH included (its dryRun, fieldManager
// and fieldValidation; force has no place there). A delete sets its own
// DeleteOptions.
func admissionOptions(r *http.Request, op admission.Operation) runtime.Object {
	q := r.URL.Query()
	// The options are strings, which cannot fail to convert (the request
	// was checked when it was read): an error leaves webhooks no options.
	switch op {
	case admission.Create:
		o := &metav1.CreateOptions{}
		if metav1.Convert_url_Values_To_v1_CreateOptions(&q, o, nil) == nil {
			return o
		}
	case admission.Update:
		o := &metav1.UpdateOptions{}
		if metav1.Convert_url_Values_To_v1_UpdateOptions(&q, o, nil) == nil {
			return o
		}
	}
	return nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, st *Store, ns string) {
	ctx := r.Context()
	obj, wr, err := h.readObject(r, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	dry := wr.dry
	m := metaOf(obj)
	if st.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ns)
		} else if m.GetNamespace() != ns {
			writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	} else {
		m.SetNamespace("")
	}
	if m.GetResourceVersion() != "" {
		writeError(w, r, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created"))
		return
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(h.generateName(m.GetGenerateName()))
	}
	h.initCreated(m)
	obj = h.trackCreate(st, obj, wr.manager())
	m = metaOf(obj)

	a := h.attrs(r, st, admission.Create, "", ns, m.GetName(), obj, nil, dry)
	if err := h.admission.Mutate(ctx, a); err != nil {
		writeError(w, r, err)
		return
	}
	// A generated name that is taken gets another, as upstream does, up to
	// maxNameGenerationAttempts tries; each try starts again from the
	// admitted object.
	var admitted runtime.Object
	if generated {
		admitted = obj.DeepCopyObject()
	}
	for attempt := 1; ; attempt++ {
		if generated && attempt > 1 {
			obj = admitted.DeepCopyObject()
			m = metaOf(obj)
			m.SetName(h.generateName(m.GetGenerateName()))
			a.Name, a.Object = m.GetName(), obj
		}
		out, err := h.createOnce(ctx, st, a, obj, dry)
		if apierrors.IsAlreadyExists(err) && generated && attempt < maxNameGenerationAttempts {
			continue
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		h.respond(w, r, st, http.StatusCreated, out)
		return
	}
}

// initCreated sets the metadata the server owns on an object it creates.
func (h *Handler) initCreated(m metav1.Object) {
	if m.GetUID() == "" {
		m.SetUID(uuid.NewUUID())
	}
	m.SetCreationTimestamp(metav1.NewTime(h.clock.Now()))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
}

// trackCreate records a created object's fields as its creator's, once
// per create, before admission as upstream does (webhooks then see them).
// managedFields a client sends are kept when they decode, as upstream's.
func (h *Handler) trackCreate(st *Store, obj runtime.Object, manager string) runtime.Object {
	if h.fields == nil {
		metaOf(obj).SetManagedFields(nil)
		return obj
	}
	return h.fields.Update(st.GroupVersionKind(), fieldmanager.Main, st.New(), obj, manager)
}

// fieldEndpoint is the field manager of an update endpoint.
func fieldEndpoint(ep endpoint) fieldmanager.Endpoint {
	switch ep {
	case statusEndpoint:
		return fieldmanager.Status
	case finalizeEndpoint:
		return fieldmanager.Finalize
	}
	return fieldmanager.Main
}

// createOnUpdate creates the object a PUT names, for a resource that
// allows it, once the update found nothing stored under that name; it
// reports whether it answered. A create that loses a race to another one
// leaves the answer to the update.
// An apply's object comes with its managedFields already.
func (h *Handler) createOnUpdate(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, obj runtime.Object, wr writeRequest, applied bool) bool {
	ctx := r.Context()
	dry := wr.dry
	obj = obj.DeepCopyObject()
	m := metaOf(obj)
	if st.Namespaced {
		m.SetNamespace(ns)
	}
	// Upstream creates even when the body names a resourceVersion.
	m.SetResourceVersion("")
	h.initCreated(m)
	if !applied {
		obj = h.trackCreate(st, obj, wr.manager())
		m = metaOf(obj)
	}
	a := h.attrs(r, st, admission.Create, "", ns, name, obj, nil, dry)
	if err := h.admission.Mutate(ctx, a); err != nil {
		writeError(w, r, err)
		return true
	}
	out, err := h.createOnce(ctx, st, a, obj, dry)
	if apierrors.IsAlreadyExists(err) {
		return false
	}
	if err != nil {
		writeError(w, r, err)
		return true
	}
	h.respond(w, r, st, http.StatusCreated, out)
	return true
}

// maxNameGenerationAttempts is how many generated names a create tries
// before giving up, as upstream: enough for about a million objects per
// prefix with a 0.1% chance of a client seeing a conflict.
const maxNameGenerationAttempts = 8

// createOnce runs the resource's create rules and validating admission on
// obj and stores it, returning the stored object.
func (h *Handler) createOnce(ctx context.Context, st *Store, a *admission.Attributes, obj runtime.Object, dry bool) (runtime.Object, error) {
	m := metaOf(obj)
	st.Strategy.PrepareForCreate(ctx, obj)
	errs := st.validateMeta(obj)
	errs = append(errs, st.Strategy.Validate(ctx, obj)...)
	if len(errs) > 0 {
		return nil, invalid(st, m.GetName(), errs)
	}
	alloc, err := allocate(ctx, st, obj, nil, dry)
	if err != nil {
		return nil, err
	}
	if err := h.admission.Validate(ctx, a); err != nil {
		settle(ctx, alloc, false)
		return nil, err
	}
	if dry {
		settle(ctx, alloc, false)
		return obj, nil
	}
	// The stored object is decoded back into obj: one decode fewer on the
	// hottest path.
	key := st.Key(m.GetNamespace(), m.GetName())
	err = st.Storage.Create(ctx, key, obj, obj)
	settle(ctx, alloc, err == nil)
	if err == nil {
		return obj, nil
	}
	err = storageError(err, st.groupResource(), m.GetName())
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if m.GetGenerateName() != "" {
		// The server picked the name, so the conflict is not the
		// client's: say so, and suggest a retry.
		err = apierrors.NewGenerateNameConflict(st.groupResource(), m.GetName(), 1)
	}
	// A name still held by an object on its way out is worth a retry
	// later; upstream says why.
	existing := st.New()
	if st.Storage.Get(ctx, key, existing) == nil && metaOf(existing).GetDeletionTimestamp() != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			se.ErrStatus.Message = "object is being deleted: " + se.ErrStatus.Message
		}
	}
	return nil, err
}

// generateName appends upstream's 5 random characters to a generateName
// prefix, cut so that the name stays within 63 characters.
func (h *Handler) generateName(prefix string) string {
	const maxPrefix = 63 - 5
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + generateNameSuffix(h.rand)
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, ep endpoint) {
	obj, wr, err := h.readObject(r, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkURLName(st, obj, ns, name); err != nil {
		writeError(w, r, err)
		return
	}
	// A uid in the body is a precondition, as upstream's: replacing a
	// recreated object of the same name is a 409, not a silent overwrite.
	var pre *storage.Preconditions
	if uid := metaOf(obj).GetUID(); uid != "" {
		pre = &storage.Preconditions{UID: &uid}
	}
	next := func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }
	out, dryRan, err := h.storeUpdate(r, st, ns, name, ep, wr, pre, next)
	// The update itself finds the name free, so a PUT of an existing
	// object (a lease renewal) costs no read to see whether to create.
	if errors.Is(err, storage.ErrKeyNotFound) && ep == mainEndpoint && st.AllowCreateOnUpdate {
		if h.createOnUpdate(w, r, st, ns, name, obj, wr, false) {
			return
		}
		out, dryRan, err = h.storeUpdate(r, st, ns, name, ep, wr, pre, next)
	}
	h.answerUpdate(w, r, st, ns, name, out, dryRan, err)
}

// readObject reads the options and decodes the body of a create or update.
func (h *Handler) readObject(r *http.Request, st *Store) (runtime.Object, writeRequest, error) {
	wr, err := readWrite(r, objectTypes)
	if err != nil {
		return nil, wr, err
	}
	obj, err := h.decodeObject(r, st, wr.body, wr.mt, wr.fieldValidation)
	return obj, wr, err
}

// storeUpdate applies an update computed from the current object by next,
// records it in managedFields as wr's manager's Update (an apply's next
// records its own), runs the resource's rules and admission and writes
// the result. It returns the object as stored, or as it would be when
// dryRan, or storage's own error.
func (h *Handler) storeUpdate(r *http.Request, st *Store, ns, name string, ep endpoint, wr writeRequest,
	pre *storage.Preconditions, next func(cur runtime.Object) (runtime.Object, error)) (out runtime.Object, dryRan bool, err error) {
	dry := wr.dry
	applied := wr.mt == applyPatchType
	out = st.New()
	// What an attempt claimed is settled with the write; an attempt that
	// lost a race frees its claims before the next one.
	var alloc registry.Allocation
	err = st.Storage.GuaranteedUpdate(r.Context(), st.Key(ns, name), out, false, pre, func(cur runtime.Object) (runtime.Object, error) {
		settle(r.Context(), alloc, false)
		alloc = nil
		obj, err := next(cur)
		if err != nil {
			return nil, err
		}
		if !applied {
			obj = h.trackUpdate(st, ep, cur, obj, wr.manager())
		}
		if alloc, err = h.prepareUpdate(r, st, ep, obj, cur, dry); err != nil {
			return nil, err
		}
		keepManagedFieldsTimes(obj, cur)
		if dry {
			return nil, errDryRun{obj}
		}
		return obj, nil
	})
	settle(r.Context(), alloc, err == nil)
	var d errDryRun
	if errors.As(err, &d) {
		return d.obj, true, nil
	}
	return out, false, err
}

// answerUpdate answers with what storeUpdate returned, finishing the
// deletion of an object the update left with nothing holding it.
func (h *Handler) answerUpdate(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, out runtime.Object, dryRan bool, err error) {
	switch {
	case err != nil:
		writeError(w, r, storageError(err, st.groupResource(), name))
	case dryRan:
		h.respond(w, r, st, http.StatusOK, out)
	case h.readyToGo(st, out):
		h.finishDeletion(w, r, st, ns, name, out)
	default:
		h.respond(w, r, st, http.StatusOK, out)
	}
}

// prepareUpdate checks the resourceVersion, keeps the server-managed
// metadata, and applies the endpoint's rules, allocation and admission. The
// allocation it returns is the caller's to settle.
func (h *Handler) prepareUpdate(r *http.Request, st *Store, ep endpoint, obj, cur runtime.Object, dry bool) (registry.Allocation, error) {
	ctx := r.Context()
	nm, cm := metaOf(obj), metaOf(cur)
	if rv := nm.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return nil, conflict(st, cm.GetName())
	}
	nm.SetResourceVersion(cm.GetResourceVersion())
	nm.SetName(cm.GetName())
	nm.SetNamespace(cm.GetNamespace())
	// A different uid stays, so that validation refuses it as immutable.
	if nm.GetUID() == "" {
		nm.SetUID(cm.GetUID())
	}
	nm.SetCreationTimestamp(cm.GetCreationTimestamp())
	nm.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(cm.GetGeneration())
	nm.SetSelfLink("")

	sub := ""
	switch ep {
	case statusEndpoint:
		sub = "status"
	case finalizeEndpoint:
		sub = "finalize"
	}
	a := h.attrs(r, st, admission.Update, sub, cm.GetNamespace(), cm.GetName(), obj, cur, dry)
	if err := h.admission.Mutate(ctx, a); err != nil {
		return nil, err
	}
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(nm, cm, metaPath)
	switch ep {
	case mainEndpoint:
		st.Strategy.PrepareForUpdate(ctx, obj, cur)
		errs = append(errs, st.validateMeta(obj)...)
		errs = append(errs, st.Strategy.ValidateUpdate(ctx, obj, cur)...)
	case statusEndpoint:
		st.Status.PrepareForUpdate(ctx, obj, cur)
		errs = append(errs, st.Status.ValidateUpdate(ctx, obj, cur)...)
	case finalizeEndpoint:
		st.Finalize.PrepareForUpdate(ctx, obj, cur)
		errs = append(errs, st.Finalize.ValidateUpdate(ctx, obj, cur)...)
	}
	if cm.GetDeletionTimestamp() != nil {
		errs = append(errs, apivalidation.ValidateNoNewFinalizers(nm.GetFinalizers(), cm.GetFinalizers(), metaPath.Child("finalizers"))...)
	}
	if len(errs) > 0 {
		return nil, invalid(st, cm.GetName(), errs)
	}
	var alloc registry.Allocation
	if ep == mainEndpoint {
		var err error
		if alloc, err = allocate(ctx, st, obj, cur, dry); err != nil {
			return nil, err
		}
	}
	if err := h.admission.Validate(ctx, a); err != nil {
		settle(ctx, alloc, false)
		return nil, err
	}
	return alloc, nil
}

// allocate claims what obj holds beyond its key, for a resource with an
// Allocator (nil otherwise).
func allocate(ctx context.Context, st *Store, obj, old runtime.Object, dry bool) (registry.Allocation, error) {
	if st.Allocator == nil {
		return nil, nil
	}
	return st.Allocator.Allocate(ctx, obj, old, dry)
}

// settle finishes an allocation (nil: nothing was claimed) once its write
// is known: written keeps it, otherwise what it claimed is freed. A client
// gone by then does not stop the freeing: the write is over either way.
func settle(ctx context.Context, alloc registry.Allocation, written bool) {
	if alloc != nil {
		alloc.Finish(context.WithoutCancel(ctx), written)
	}
}

// release frees what a deleted object held beyond its key.
func release(ctx context.Context, st *Store, obj runtime.Object) {
	if st.Allocator != nil {
		st.Allocator.Release(context.WithoutCancel(ctx), obj)
	}
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, ep endpoint) {
	wr, err := readWrite(r, patchTypes)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if wr.mt == applyPatchType {
		h.apply(w, r, st, ns, name, ep, wr)
		return
	}
	p := parsePatch(wr.mt, wr.body, wr.fieldValidation)
	out, dryRan, err := h.storeUpdate(r, st, ns, name, ep, wr, nil, func(cur runtime.Object) (runtime.Object, error) {
		obj, err := h.applyParsedPatch(r, st, name, p, cur)
		if err != nil {
			return nil, err
		}
		// A patch may not move the object: upstream refuses a changed name
		// or namespace instead of quietly keeping the old ones.
		if err := checkURLName(st, obj, ns, name); err != nil {
			return nil, err
		}
		return obj, nil
	})
	h.answerUpdate(w, r, st, ns, name, out, dryRan, err)
}

// checkURLName refuses an object whose name or namespace is not the URL's.
func checkURLName(st *Store, obj runtime.Object, ns, name string) error {
	m := metaOf(obj)
	if m.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
	}
	if st.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != ns {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// readyToGo reports whether an object being deleted has nothing left
// holding it: no finalizers, grace period over, no spec finalizers.
func (h *Handler) readyToGo(st *Store, obj runtime.Object) bool {
	m := metaOf(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return false
	}
	if st.Deletion != nil && st.Deletion.PrepareForDelete(obj.DeepCopyObject()) {
		return false
	}
	return true
}

// finishDeletion removes an object whose last finalizer just went.
func (h *Handler) finishDeletion(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, obj runtime.Object) {
	uid := metaOf(obj).GetUID()
	out := st.New()
	err := st.Storage.Delete(r.Context(), st.Key(ns, name), out, &storage.Preconditions{UID: &uid}, nil)
	if err != nil && !apierrors.IsNotFound(storageError(err, st.groupResource(), name)) {
		writeError(w, r, storageError(err, st.groupResource(), name))
		return
	}
	if err == nil {
		release(r.Context(), st, out)
	}
	h.respond(w, r, st, http.StatusOK, obj)
}
