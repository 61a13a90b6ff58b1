package controllerutil

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Patcher sends a merge patch to one kind of object (pods, replicasets)
// and returns the patched object.
type Patcher[T metav1.Object] func(ctx context.Context, namespace, name string, patch []byte) (T, error)

// Claim returns the objects the owner controls after adopting matching
// orphans and releasing owned objects that no longer match its selector, as
// upstream's ControllerRefManager does. canAdopt is asked (at most once)
// before the first adoption; it should re-read the owner from the server and
// fail if it is being deleted, so a stale cache never adopts into a dying owner.
// A finalizer other than "" goes in the same write as the owner reference: an
// adopted object gets it, a released one loses it (the Job controller's
// tracking finalizer, as upstream's Job adopts and releases pods).
func Claim[T metav1.Object](ctx context.Context, owner metav1.Object, ownerRef metav1.OwnerReference, finalizer string,
	sel labels.Selector, objs []T, patch Patcher[T], canAdopt func(ctx context.Context) error) ([]T, error) {
	var owned []T
	var errs []error
	adoptChecked := false
	for _, o := range objs {
		ref := ControllerRef(o)
		matches := sel.Matches(labels.Set(o.GetLabels()))
		switch {
		case ref != nil && ref.UID == owner.GetUID():
			if matches || owner.GetDeletionTimestamp() != nil {
				owned = append(owned, o)
				continue
			}
			if _, err := release(ctx, o, owner.GetUID(), finalizer, patch); err != nil {
				errs = append(errs, err)
			}
		case ref != nil:
			// Someone else's.
		case matches && o.GetDeletionTimestamp() == nil && owner.GetDeletionTimestamp() == nil:
			if !adoptChecked {
				if err := canAdopt(ctx); err != nil {
					return owned, fmt.Errorf("can not adopt: %w", err)
				}
				adoptChecked = true
			}
			adopted, err := adopt(ctx, o, ownerRef, finalizer, patch)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			owned = append(owned, adopted)
		}
	}
	if len(errs) > 0 {
		return owned, fmt.Errorf("claim: %v", errs)
	}
	return owned, nil
}

type metaPatch struct {
	Metadata patchMeta `json:"metadata"`
}

type patchMeta struct {
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	ResourceVersion string                  `json:"resourceVersion,omitempty"`
	UID             types.UID               `json:"uid,omitempty"`
	// Finalizers is the whole new list, sent only when it changes.
	Finalizers *[]string `json:"finalizers,omitempty"`
}

// adopt and release send a JSON merge patch of the whole ownerReferences list
// with the resourceVersion, so a concurrent change of the list conflicts
// instead of being overwritten; so does the finalizer list, when the
// finalizer changes it.
func adopt[T metav1.Object](ctx context.Context, o T, ref metav1.OwnerReference, finalizer string, patch Patcher[T]) (T, error) {
	refs := append(append([]metav1.OwnerReference{}, o.GetOwnerReferences()...), ref)
	return sendOwnerPatch(ctx, o, refs, finalizers(o, finalizer, true), patch)
}

func release[T metav1.Object](ctx context.Context, o T, uid types.UID, finalizer string, patch Patcher[T]) (T, error) {
	var refs []metav1.OwnerReference
	for _, r := range o.GetOwnerReferences() {
		if r.UID != uid {
			refs = append(refs, r)
		}
	}
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return sendOwnerPatch(ctx, o, refs, finalizers(o, finalizer, false), patch)
}

// finalizers is o's finalizer list with finalizer last (add) or without
// it, or nil when that changes nothing.
func finalizers(o metav1.Object, finalizer string, add bool) *[]string {
	if finalizer == "" {
		return nil
	}
	cur := o.GetFinalizers()
	fs := slices.DeleteFunc(slices.Clone(cur), func(f string) bool { return f == finalizer })
	if add {
		fs = append(fs, finalizer)
	}
	if slices.Equal(fs, cur) {
		return nil
	}
	if fs == nil {
		fs = []string{}
	}
	return &fs
}

func sendOwnerPatch[T metav1.Object](ctx context.Context, o T, refs []metav1.OwnerReference, fs *[]string, patch Patcher[T]) (T, error) {
	b, err := json.Marshal(metaPatch{Metadata: patchMeta{OwnerReferences: refs, ResourceVersion: o.GetResourceVersion(), UID: o.GetUID(), Finalizers: fs}})
	if err != nil {
		return o, fmt.Errorf("encode owner patch: %w", err)
	}
	updated, err := patch(ctx, o.GetNamespace(), o.GetName(), b)
	if err != nil {
		return o, fmt.Errorf("patch owners of %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return updated, nil
}

// CanAdopt is Claim's canAdopt for an owner of the given kind ("job",
// "replicaset"), read back through get (a typed client's Get): adoption is
// refused when the owner is gone, was replaced by another object of the same
// name, or is being deleted.
func CanAdopt[T metav1.Object](kind string, owner metav1.Object, get func(context.Context, string, metav1.GetOptions) (T, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := get(ctx, owner.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.GetUID() != owner.GetUID() || fresh.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s %s/%s is gone or being deleted", kind, owner.GetNamespace(), owner.GetName())
		}
		return nil
	}
}

// PodPatcher sends Claim's merge patches to pods.
func PodPatcher(client kubernetes.Interface) Patcher[*corev1.Pod] {
	return func(ctx context.Context, ns, name string, b []byte) (*corev1.Pod, error) {
		return client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	}
}
