// Package namespacelifecycle refuses new objects in namespaces that do not
// exist or are being deleted, and the deletion of the system namespaces.
package namespacelifecycle

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// NamespaceGetter reads a namespace; a missing one is an apierrors NotFound.
// The namespace may be shared with other readers: do not modify it.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// Plugin is the NamespaceLifecycle admission plugin.
type Plugin struct {
	namespaces NamespaceGetter
	immortal   map[string]bool
}

// New returns the plugin; default, kube-system and kube-public may not be deleted.
func New(namespaces NamespaceGetter) *Plugin {
	return &Plugin{namespaces: namespaces, immortal: map[string]bool{
		metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true,
	}}
}

// Name implements admission.Validator.
func (p *Plugin) Name() string { return "NamespaceLifecycle" }

var namespaceGR = schema.GroupResource{Resource: "namespaces"}

// Validate implements admission.Validator.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	isNamespace := a.Resource.GroupVersion.Group == "" && a.Resource.Name == "namespaces"
	if isNamespace && a.Operation == admission.Delete && p.immortal[a.Name] {
		return apierrors.NewForbidden(namespaceGR, a.Name, fmt.Errorf("this namespace may not be deleted"))
	}
	if a.Operation != admission.Create || !a.Resource.Namespaced || a.Namespace == "" {
		return nil
	}
	ns, err := p.namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("%s %q is forbidden: unable to create new content in namespace %s because it is being terminated",
				a.Resource.Name, a.Name, a.Namespace),
			Details: &metav1.StatusDetails{Name: a.Name, Group: a.Resource.GroupVersion.Group, Kind: a.Resource.Name,
				Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace"}}},
		}}
	}
	return nil
}
