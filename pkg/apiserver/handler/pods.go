package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// bind serves POST pods/{name}/binding: it sets spec.nodeName once. As
// upstream, the binding's uid and resourceVersion, when given, must be the
// pod's.
func (h *Handler) bind(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	h.serveBinding(w, r, st, ns, name, true)
}

// bindCollection serves POST bindings, the legacy form of pods/binding: the
// body names the pod. As upstream, its uid and resourceVersion are dropped
// as on any create, so they hold the pod to nothing here.
func (h *Handler) bindCollection(w http.ResponseWriter, r *http.Request, ns string) {
	st, ok := h.stores[gvr{"", "v1", "pods"}]
	if !ok {
		writeError(w, r, NotFound(r))
		return
	}
	h.serveBinding(w, r, st, ns, "", false)
}

// bindingsResource is the legacy bindings collection as admission sees it:
// upstream admits a POST to it as a create of "bindings", not of
// pods/binding.
var bindingsResource = &registry.Resource{
	GroupVersion: corev1.SchemeGroupVersion, Name: "bindings", Singular: "binding", Kind: "Binding", Namespaced: true,
	New: func() runtime.Object { return &corev1.Binding{} },
}

// serveBinding binds the pod name (from the body when name is empty);
// preconditions says whether the body's uid and resourceVersion must hold.
// As upstream, the binding is a create that runs the admission chain:
// mutating plugins first, validating ones once the binding is valid.
func (h *Handler) serveBinding(w http.ResponseWriter, r *http.Request, st *Store, ns, name string, preconditions bool) {
	ctx := r.Context()
	wr, err := readWrite(r, objectTypes)
	if err != nil {
		writeError(w, r, err)
		return
	}
	binding := &corev1.Binding{}
	gvk := corev1.SchemeGroupVersion.WithKind("Binding")
	var dec runtime.Decoder = h.json
	if wr.mt == protobufType {
		dec = h.proto
	}
	if _, _, err := dec.Decode(wr.body, &gvk, binding); err != nil {
		writeError(w, r, badRequestf("the body of the request could not be decoded as Binding: %v", err))
		return
	}
	if binding.Namespace != "" && binding.Namespace != ns {
		writeError(w, r, badRequestf("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	// Admission sees the binding in the request's namespace, as upstream's.
	binding.Namespace = ns
	a := h.attrs(r, st, admission.Create, "binding", ns, name, binding, nil, wr.dry)
	a.Kind = gvk
	if !preconditions {
		binding.UID, binding.ResourceVersion, binding.CreationTimestamp = "", "", metav1.Time{}
		a.Resource, a.Subresource, a.Kind, a.Name = bindingsResource, "", schema.GroupVersionKind{}, binding.Name
	}
	if err := h.admission.Mutate(ctx, a); err != nil {
		writeError(w, r, err)
		return
	}
	switch {
	case !preconditions:
		name = binding.Name
	case binding.Name != name:
		writeError(w, r, badRequestf("name in URL does not match name in Binding object"))
		return
	}
	if errs := validateBinding(binding); len(errs) > 0 {
		writeError(w, r, apierrors.NewInvalid(gvk.GroupKind(), name, errs))
		return
	}
	if err := h.admission.Validate(ctx, a); err != nil {
		writeError(w, r, err)
		return
	}
	if name == "" {
		writeError(w, r, badRequestf("Name parameter required."))
		return
	}
	if err := h.assignPod(ctx, st, ns, binding, wr.dry); err != nil {
		writeError(w, r, err)
		return
	}
	writeStatus(w, http.StatusCreated)
}

// assignPod sets the pod's node from the binding, once, with the binding's
// annotations and labels. A dry run goes as far as the write, so that it
// is refused as the real binding would be.
func (h *Handler) assignPod(ctx context.Context, st *Store, ns string, binding *corev1.Binding, dry bool) error {
	name := binding.Name
	// Refusals name the binding, as upstream's: "Operation cannot be
	// fulfilled on pods/binding ...".
	conflict := func(format string, args ...any) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, name, fmt.Errorf(format, args...))
	}
	var pre *storage.Preconditions
	if binding.UID != "" || binding.ResourceVersion != "" {
		pre = &storage.Preconditions{}
		if binding.UID != "" {
			pre.UID = &binding.UID
		}
		if binding.ResourceVersion != "" {
			pre.ResourceVersion = &binding.ResourceVersion
		}
	}
	err := st.Storage.GuaranteedUpdate(ctx, st.Key(ns, name), st.New(), false, pre, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod).DeepCopy()
		if pod.DeletionTimestamp != nil {
			return nil, conflict("pod %s is being deleted, cannot be assigned to a host", name)
		}
		if pod.Spec.NodeName != "" {
			return nil, conflict("pod %v is already assigned to node %q", name, pod.Spec.NodeName)
		}
		// A gated pod is not ready for scheduling: binding it would
		// bypass whoever holds the gate.
		if len(pod.Spec.SchedulingGates) > 0 {
			return nil, conflict("pod %v has non-empty .spec.schedulingGates", name)
		}
		pod.Spec.NodeName = binding.Target.Name
		// A nomination (from preemption) has done its work once the pod
		// is bound; upstream clears it here too (KEP-5278, 1.35+).
		pod.Status.NominatedNodeName = ""
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		// As upstream since 1.35 (PodTopologyLabelsAdmission): the
		// binding's labels overwrite the pod's.
		for k, v := range binding.Labels {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[k] = v
		}
		setPodScheduled(pod, metav1.NewTime(h.clock.Now()))
		if dry {
			return nil, errDryRun{pod}
		}
		return pod, nil
	})
	if errors.As(err, new(errDryRun)) {
		return nil
	}
	return storageError(err, st.groupResource(), name)
}

// validateBinding checks the target as upstream: a Node (the kind may be
// left out) with a name.
func validateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if k := b.Target.Kind; k != "" && k != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), k, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

func setPodScheduled(pod *corev1.Pod, now metav1.Time) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled {
			if c.Status != corev1.ConditionTrue {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now,
	})
}

func writeStatus(w http.ResponseWriter, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":%d}`+"\n", code)
}

// podLog serves GET pods/{name}/log by streaming from the pod's kubelet.
func (h *Handler) podLog(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	if err := checkLogOptions(r.URL.Query(), name); err != nil {
		writeError(w, r, err)
		return
	}
	pod := &corev1.Pod{}
	if err := st.Storage.Get(r.Context(), st.Key(ns, name), pod); err != nil {
		writeError(w, r, storageError(err, st.groupResource(), name))
		return
	}
	container := r.URL.Query().Get("container")
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			var app []string
			for _, c := range pod.Spec.Containers {
				app = append(app, c.Name)
			}
			writeError(w, r, badRequestf("a container name must be specified for pod %s, choose one of: [%s]", name, strings.Join(app, " ")))
			return
		}
		container = pod.Spec.Containers[0].Name
	} else if !contains(names, container) {
		writeError(w, r, badRequestf("container %s is not valid for pod %s", container, name))
		return
	}
	if pod.Spec.NodeName == "" {
		writeError(w, r, badRequestf("pod %s does not have a host assigned", name))
		return
	}
	if h.logs == nil {
		writeError(w, r, apierrors.NewServiceUnavailable("pod logs are not available: the apiserver has no kubelet client configured"))
		return
	}
	if err := h.logs.StreamLogs(r, w, pod.Spec.NodeName, ns, name, container); err != nil {
		writeError(w, r, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// checkLogOptions refuses log options as upstream does before it looks the
// pod up: a value of the wrong type is a 400 in the parser's words, a value
// out of range a 422 on PodLogOptions.
func checkLogOptions(q url.Values, name string) error {
	ints := map[string]int64{}
	for _, p := range []string{"sinceSeconds", "sinceTime", "tailLines", "limitBytes"} {
		v, ok := q[p]
		if !ok || len(v) == 0 || v[0] == "" {
			continue
		}
		if p == "sinceTime" {
			if _, err := time.Parse(time.RFC3339, v[0]); err != nil {
				return apierrors.NewBadRequest(err.Error())
			}
			continue
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		ints[p] = n
	}
	var errs field.ErrorList
	if n, ok := ints["tailLines"]; ok && n < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), n, "must be greater than or equal to 0"))
	}
	if n, ok := ints["limitBytes"]; ok && n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), n, "must be greater than 0"))
	}
	_, since := ints["sinceSeconds"]
	if since && q.Get("sinceTime") != "" {
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	}
	if n := ints["sinceSeconds"]; since && n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), n, "must be greater than 0"))
	}
	if q.Has("stream") {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	return nil
}
