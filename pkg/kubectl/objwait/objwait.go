// Package objwait waits, with watches rather than polling, for an object
// to disappear or to reach a condition; delete, wait and rollout share it.
package objwait

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// UIDOf returns the UID of what a DELETE answered: the object, or the
// Success Status that names it (what most kinds answer when the object went
// at once); "" when neither says.
func UIDOf(obj runtime.Object) types.UID {
	switch o := obj.(type) {
	case *metav1.Status:
		if o.Details != nil {
			return o.Details.UID
		}
		return ""
	case *unstructured.Unstructured:
		if o.GetKind() == "Status" {
			uid, _, _ := unstructured.NestedString(o.Object, "details", "uid")
			return types.UID(uid)
		}
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return a.GetUID()
}

func resourceFor(dyn dynamic.Interface, m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(ns)
	}
	return dyn.Resource(m.Resource)
}

// Current returns ns/name, or nil when it does not exist.
func Current(ctx context.Context, dyn dynamic.Interface, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	u, err := resourceFor(dyn, m, ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// Gone returns once ns/name is deleted (or replaced by an object with
// another UID, when uid is given).
func Gone(ctx context.Context, dyn dynamic.Interface, m *meta.RESTMapping, ns, name string, uid types.UID) error {
	return Until(ctx, dyn, m, ns, name, func(u *unstructured.Unstructured) bool {
		return u == nil || (uid != "" && u.GetUID() != uid)
	})
}

// Until watches ns/name until done returns true; done sees nil once the
// object does not exist.
func Until(ctx context.Context, dyn dynamic.Interface, m *meta.RESTMapping, ns, name string, done func(*unstructured.Unstructured) bool) error {
	ri := resourceFor(dyn, m, ns)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return err
		}
		var cur *unstructured.Unstructured
		if len(list.Items) > 0 {
			cur = &list.Items[0]
		}
		if done(cur) {
			return nil
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			return err
		}
		expired, err := consume(ctx, w, done)
		w.Stop()
		if err != nil || !expired {
			return err
		}
	}
}

// consume reads events until done; expired means the watch ended early
// and the caller should list again.
func consume(ctx context.Context, w watch.Interface, done func(*unstructured.Unstructured) bool) (expired bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("timed out: %w", ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return true, nil
			}
			switch ev.Type {
			case watch.Error:
				if apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)) {
					return true, nil
				}
				return false, apierrors.FromObject(ev.Object)
			case watch.Deleted:
				if done(nil) {
					return false, nil
				}
			case watch.Added, watch.Modified:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ok && done(u) {
					return false, nil
				}
			}
		}
	}
}
