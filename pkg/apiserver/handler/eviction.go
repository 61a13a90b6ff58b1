package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// evict serves POST pods/{name}/eviction (policy/v1 Eviction, or the same
// body as policy/v1beta1): the pod is deleted with the eviction's
// DeleteOptions (gracefully, for a pod on a node) after it got the
// DisruptionTarget condition, unless the PodDisruptionBudget covering it
// has no disruption left to spend (429, so that clients such as `kubectl
// drain` retry). A pod that is not running, or is going already, takes
// nothing from a budget.
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
	if ev.Namespace != "" && ev.Namespace != ns {
		writeError(w, r, badRequestf("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	ev.Namespace = ns
	// As upstream, an eviction is a create of pods/eviction that runs the
	// admission chain: webhooks see the Eviction and may change or refuse
	// it, NodeRestriction lets a node evict only its own pods.
	ctx := r.Context()
	a := h.attrs(r, st, admission.Create, "eviction", ns, name, ev, nil, dry)
	a.Kind = policyv1.SchemeGroupVersion.WithKind("Eviction")
	if err := h.admission.Mutate(ctx, a); err != nil {
		writeError(w, r, err)
		return
	}
	// As upstream, an eviction names its pod: one without a name is
	// refused too.
	if ev.Name != name {
		writeError(w, r, badRequestf("name in URL does not match name in Eviction object"))
		return
	}
	if err := h.admission.Validate(ctx, a); err != nil {
		writeError(w, r, err)
		return
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if ptr.Deref(opts.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		// An unreadable pod cannot be weighed against its budget.
		writeError(w, r, apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions", "ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option")}))
		return
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
	if err := h.evictPod(r, st, ns, name, opts); err != nil {
		writeError(w, r, err)
		return
	}
	writeStatus(w, http.StatusCreated)
}

// evictionConflictRetries bounds how often an eviction re-reads a pod that
// changed under it (a kubelet writing its status) before giving up.
const evictionConflictRetries = 20

func (h *Handler) evictPod(r *http.Request, st *Store, ns, name string, opts *metav1.DeleteOptions) error {
	ctx := r.Context()
	rvGiven := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
	pod := &corev1.Pod{}
	for attempt := 1; ; attempt++ {
		if err := st.Storage.Get(ctx, st.Key(ns, name), pod); err != nil {
			return storageError(err, st.groupResource(), name)
		}
		if !outsideBudgets(pod) {
			break
		}
		del := opts
		// Pinned to the pod as read, so that it cannot have turned
		// ready (and covered by a budget) in between.
		if pod.DeletionTimestamp == nil && !podTerminal(pod) && !rvGiven {
			del = withResourceVersion(opts, pod.ResourceVersion)
		}
		err := h.disruptAndDelete(r, st, ns, name, del)
		if !apierrors.IsConflict(err) || rvGiven || attempt == evictionConflictRetries {
			return err
		}
	}

	budgets, err := h.budgetsCovering(ctx, pod)
	if err != nil {
		return err
	}
	switch len(budgets) {
	case 0:
		return h.disruptAndDelete(r, st, ns, name, opts)
	case 1:
	default:
		return failure(http.StatusInternalServerError, "", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
	}
	pdb := budgets[0]
	if !podReady(pod) && unhealthyMayGo(pdb) {
		// An unready pod does not count as healthy: deleting it spends
		// nothing, as long as it is still unready when it goes.
		err := h.disruptAndDelete(r, st, ns, name, withResourceVersion(opts, pod.ResourceVersion))
		if apierrors.IsConflict(err) && !rvGiven {
			return budgetBusy(pdb.Name)
		}
		return err
	}
	if err := h.spendDisruption(ctx, pdb, pod.Name, len(opts.DryRun) > 0); err != nil {
		return err
	}
	return h.disruptAndDelete(r, st, ns, name, opts)
}

// disruptAndDelete gives the pod the DisruptionTarget condition, then
// deletes it with opts (a resourceVersion precondition in opts must hold
// for the condition's write, and then means the pod as it wrote it).
func (h *Handler) disruptAndDelete(r *http.Request, st *Store, ns, name string, opts *metav1.DeleteOptions) error {
	dry := len(opts.DryRun) > 0
	var written runtime.Object
	if !dry {
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
			return storageError(err, st.groupResource(), name)
		}
		if p := opts.Preconditions; p != nil && p.ResourceVersion != nil {
			opts = withResourceVersion(opts, metaOf(out).GetResourceVersion())
		}
		written = out
	}
	_, _, err := h.deleteOne(r, st, ns, name, written, opts, dry)
	return err
}

// withResourceVersion is a copy of opts with a resourceVersion precondition.
func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	opts = opts.DeepCopy()
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	opts.Preconditions.ResourceVersion = &rv
	return opts
}

// outsideBudgets: a pod that never ran, has ended or is going already
// disrupts nothing more by going.
func outsideBudgets(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodPending || podTerminal(pod) || pod.DeletionTimestamp != nil
}

func podTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unhealthyMayGo says whether the budget lets an unready pod go without
// spending a disruption.
func unhealthyMayGo(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

var budgetsResource = schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudgets"}

// budgetsCovering returns the PodDisruptionBudgets whose selector matches
// the pod (in policy/v1 an empty selector matches every pod of the
// namespace, a missing one none).
func (h *Handler) budgetsCovering(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	st, ok := h.byGR[budgetsResource]
	if !ok {
		return nil, nil
	}
	list := &policyv1.PodDisruptionBudgetList{}
	if err := st.Storage.List(ctx, st.collectionKey(pod.Namespace), storage.ListOptions{}, list); err != nil {
		return nil, storageError(err, budgetsResource, "")
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(list.Items[i].Spec.Selector)
		if err == nil && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// maxDisruptedPods bounds status.disruptedPods: evictions the controller
// has not yet seen through. Past it the budget refuses more.
const maxDisruptedPods = 2000

// spendDisruption takes one disruption from the budget for podName and
// records the pod in status.disruptedPods, so that the controller does not
// count it as healthy while it goes. A dry run only checks.
func (h *Handler) spendDisruption(ctx context.Context, pdb *policyv1.PodDisruptionBudget, podName string, dry bool) error {
	spend := func(cur *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
		switch s := cur.Status; {
		case s.ObservedGeneration < cur.Generation:
			return nil, budgetBusy(cur.Name)
		case s.DisruptionsAllowed < 0:
			return nil, apierrors.NewForbidden(schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudget"}, cur.Name, errors.New("pdb disruptions allowed is negative"))
		case len(s.DisruptedPods) > maxDisruptedPods:
			return nil, apierrors.NewForbidden(schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudget"}, cur.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
		case s.DisruptionsAllowed == 0:
			return nil, budgetSpent(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", cur.Name, s.DesiredHealthy, s.CurrentHealthy), 0)
		}
		next := cur.DeepCopy()
		next.Status.DisruptionsAllowed--
		if next.Status.DisruptionsAllowed == 0 {
			pdbhelper.UpdateDisruptionAllowedCondition(next)
		}
		if next.Status.DisruptedPods == nil {
			next.Status.DisruptedPods = map[string]metav1.Time{}
		}
		next.Status.DisruptedPods[podName] = metav1.NewTime(h.clock.Now())
		return next, nil
	}
	if dry {
		_, err := spend(pdb)
		return err
	}
	st := h.byGR[budgetsResource]
	err := st.Storage.GuaranteedUpdate(ctx, st.Key(pdb.Namespace, pdb.Name), st.New(), false, nil, func(cur runtime.Object) (runtime.Object, error) {
		return spend(cur.(*policyv1.PodDisruptionBudget))
	})
	return storageError(err, budgetsResource, pdb.Name)
}

// budgetBusy answers an eviction the budget cannot decide on yet: its
// controller has not caught up with its spec, or the pod changed meanwhile.
func budgetBusy(name string) error {
	return budgetSpent(fmt.Sprintf("The disruption budget %s is still being processed by the server.", name), 10)
}

// budgetSpent is upstream's 429 for an eviction a budget refuses; the
// cause tells the user which budget and why.
func budgetSpent(cause string, retryAfter int) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
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
