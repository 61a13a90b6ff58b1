package handler

import (
	"encoding/json"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
)

// evict serves POST pods/{name}/eviction (policy/v1 Eviction, or the same
// body as policy/v1beta1). kube-lite serves no PodDisruptionBudgets, so
// every eviction is allowed, as upstream's is for a pod no budget covers:
// the pod gets the DisruptionTarget condition, then is deleted with the
// eviction's DeleteOptions (gracefully, for a pod on a node).
func (h *Handler) evict(w http.ResponseWriter, r *http.Request, st *Store, ns, name string) {
	wr, err := readWrite(r, objectTypes)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, mt, dry := wr.body, wr.mt, wr.dry
	ev, err := h.decodeEviction(body, mt)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ev.Name != "" && ev.Name != name {
		writeError(w, r, badRequestf("name in URL does not match name in Eviction object"))
		return
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		writeError(w, r, optionsInvalid("DeleteOptions", errs))
		return
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	gr := st.groupResource()
	if len(opts.DryRun) == 0 {
		out := st.New()
		err := st.Storage.GuaranteedUpdate(r.Context(), st.Key(ns, name), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			if err := st.checkPreconditions(opts.Preconditions, cur); err != nil {
				return nil, err
			}
			pod := cur.(*corev1.Pod).DeepCopy()
			setDisruptionTarget(pod, metav1.NewTime(h.clock.Now()))
			return pod, nil
		})
		if err != nil {
			writeError(w, r, storageError(err, gr, name))
			return
		}
		// The condition was this request's own write: a resourceVersion
		// precondition now means the pod as it was just written.
		if p := opts.Preconditions; p != nil && p.ResourceVersion != nil {
			rv := metaOf(out).GetResourceVersion()
			p.ResourceVersion = &rv
		}
	}
	if _, _, err := h.deleteOne(r, st, ns, name, opts, len(opts.DryRun) > 0); err != nil {
		writeError(w, r, err)
		return
	}
	writeStatus(w, http.StatusCreated)
}

// decodeEviction reads an Eviction of policy/v1 or policy/v1beta1 (the
// same fields); another kind is upstream's 400.
func (h *Handler) decodeEviction(body []byte, mt string) (*policyv1.Eviction, error) {
	ev := &policyv1.Eviction{}
	if mt == protobufType {
		gvk := policyv1.SchemeGroupVersion.WithKind("Eviction")
		if _, _, err := h.proto.Decode(body, &gvk, ev); err != nil {
			return nil, badRequestf("the body of the request could not be decoded as Eviction: %v", err)
		}
		return ev, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil {
		return nil, badRequestf("the body of the request could not be decoded as Eviction: %v", err)
	}
	switch {
	case tm.Kind != "" && tm.Kind != "Eviction",
		tm.APIVersion != "" && tm.APIVersion != "policy/v1" && tm.APIVersion != "policy/v1beta1":
		return nil, badRequestf("%s in version %q cannot be handled as a Eviction", tm.Kind, tm.APIVersion)
	}
	if err := json.Unmarshal(body, ev); err != nil {
		return nil, badRequestf("Eviction in version %q cannot be handled as a Eviction: %v", tm.APIVersion, err)
	}
	return ev, nil
}

// setDisruptionTarget records why the pod is going, in upstream's words.
func setDisruptionTarget(pod *corev1.Pod, now metav1.Time) {
	want := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: now}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status == want.Status {
			want.LastTransitionTime = c.LastTransitionTime
		}
		*c = want
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, want)
}
