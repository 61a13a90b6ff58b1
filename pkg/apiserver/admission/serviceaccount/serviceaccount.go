// Package serviceaccount gives every new pod a service account ("default"
// unless it names one) and refuses pods whose service account does not
// exist. The "default" account is created on demand: when a namespace is
// created, and again whenever a pod needs it and it is missing (upstream
// leaves that to a controller and makes pods wait for it).
//
// The projected service-account token volume (kube-api-access-*) is not
// added automatically: pods have no in-cluster route to the API (services
// get no virtual IPs), and each token would cost a TokenRequest at every
// pod start. A pod that wants one declares a projected serviceAccountToken
// volume, which the kubelet mounts.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// DefaultName is the service account pods get when they name none.
const DefaultName = "default"

// mirrorAnnotation marks the API copy of a kubelet's static pod; such pods
// may not use service accounts, as upstream.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// Accounts reads and creates service accounts; errors are apierrors
// (NotFound, AlreadyExists).
type Accounts interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	CreateServiceAccount(ctx context.Context, sa *corev1.ServiceAccount) error
}

// Plugin is the ServiceAccount admission plugin.
type Plugin struct{ accounts Accounts }

// New returns the plugin.
func New(accounts Accounts) *Plugin { return &Plugin{accounts: accounts} }

// Name implements admission.Mutator and admission.Validator.
func (p *Plugin) Name() string { return "ServiceAccount" }

func isCore(a *admission.Attributes, resource string) bool {
	return a.Resource != nil && a.Resource.GroupVersion.Group == "" && a.Resource.Name == resource && a.Subresource == ""
}

// Admit implements admission.Mutator: pods without a service account get
// "default", and a pod whose account does not exist is refused here, in
// the mutating phase as upstream, so that is the error a user sees rather
// than a later plugin's (LimitRanger's, say).
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Create || !isCore(a, "pods") {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || isMirror(pod) {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultName
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	return p.lookup(ctx, a, pod.Spec.ServiceAccountName)
}

func isMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[mirrorAnnotation]
	return ok
}

// Validate implements admission.Validator: the pod's service account must
// exist; a new namespace gets its "default" account.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return nil
	}
	if isCore(a, "namespaces") {
		if a.DryRun {
			return nil
		}
		// The namespace is not stored yet, but its default account can be:
		// it waits there for the namespace, and a failed namespace create
		// leaves only what the next create would make anyway.
		if err := p.ensureDefault(ctx, a.Name); err != nil {
			return fmt.Errorf("error creating the default service account of %s: %w", a.Name, err)
		}
		return nil
	}
	if !isCore(a, "pods") {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if isMirror(pod) {
		if pod.Spec.ServiceAccountName != "" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.Name,
				fmt.Errorf("a mirror pod may not reference service accounts"))
		}
		return nil
	}
	// Checked again: a mutating webhook may have changed the account.
	return p.lookup(ctx, a, pod.Spec.ServiceAccountName)
}

// lookup refuses a pod whose service account does not exist, creating the
// namespace's "default" account if that is the one missing.
func (p *Plugin) lookup(ctx context.Context, a *admission.Attributes, name string) error {
	_, err := p.accounts.GetServiceAccount(ctx, a.Namespace, name)
	if apierrors.IsNotFound(err) && name == DefaultName && !a.DryRun {
		err = p.ensureDefault(ctx, a.Namespace)
	}
	if apierrors.IsNotFound(err) {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.Name,
			fmt.Errorf("error looking up service account %s/%s: serviceaccount %q not found", a.Namespace, name, name))
	}
	if err != nil {
		return fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, name, err)
	}
	return nil
}

func (p *Plugin) ensureDefault(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: ns}}
	if err := p.accounts.CreateServiceAccount(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
