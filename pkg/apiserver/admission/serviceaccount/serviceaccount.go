// Package serviceaccount gives every new pod a service account ("default"
// unless it names one) and refuses pods whose service account does not
// exist. The "default" account is created on demand: when a namespace is
// created, and again whenever a pod needs it and it is missing (upstream
// leaves that to a controller and makes pods wait for it).
//
// As upstream, a pod whose account and spec allow it
// (automountServiceAccountToken, the pod's setting winning) gets the
// projected kube-api-access-<random> volume, mounted read-only at
// /var/run/secrets/kubernetes.io/serviceaccount in each of its containers
// and init containers that mounts nothing there already: a token bound to
// the pod, the cluster's CA from the kube-root-ca.crt ConfigMap and the
// pod's namespace, which is what client-go's rest.InClusterConfig reads.
// An apiserver without a signing key adds no such volume.
package serviceaccount

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

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

// The automatic token volume, as upstream's.
const (
	// TokenVolumePrefix starts the name of the automatic token volume.
	TokenVolumePrefix = "kube-api-access-"
	// TokenMountPath is where containers find the token, CA and namespace.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCAConfigMap is the ConfigMap in every namespace holding the CA
	// that signs the apiserver's serving certificate (key ca.crt).
	RootCAConfigMap = "kube-root-ca.crt"
	// tokenExpirationSeconds is upstream's WarnOnlyBoundTokenExpirationSeconds:
	// an hour and 7 s, the odd value telling the apiserver that this is the
	// automatic volume, whose token it may make last longer (extended expiry).
	tokenExpirationSeconds = 3607
)

// Plugin is the ServiceAccount admission plugin.
type Plugin struct {
	accounts Accounts
	// issuesTokens says whether the apiserver can issue tokens; nil: yes.
	issuesTokens func() bool
	// suffix makes the random end of a token volume's name.
	suffix func() string
}

// Option configures the plugin.
type Option func(*Plugin)

// WithTokenIssuing tells the plugin whether the apiserver can issue tokens
// (it has a signing key). One that cannot gets pods no token volume: the
// kubelet could never set it up, and every pod would wait for it. Upstream's
// apiserver does not start without a signing key; kube-lite's does.
func WithTokenIssuing(issues func() bool) Option {
	return func(p *Plugin) { p.issuesTokens = issues }
}

// New returns the plugin.
func New(accounts Accounts, opts ...Option) *Plugin {
	p := &Plugin{accounts: accounts, suffix: func() string { return utilrand.String(5) }}
	for _, o := range opts {
		o(p)
	}
	return p
}

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
	sa, err := p.lookup(ctx, a, pod.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	if shouldAutomount(sa, pod) && (p.issuesTokens == nil || p.issuesTokens()) {
		p.mountToken(pod)
	}
	return nil
}

// shouldAutomount: the pod's automountServiceAccountToken wins over its
// account's; neither set means yes.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa != nil && sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the token volume in every container and init container
// that has nothing at TokenMountPath, adding the volume if one of them
// needs it and the pod has none yet, as upstream's mountServiceAccountToken.
func (p *Plugin) mountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = TokenVolumePrefix + p.suffix()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: TokenMountPath}
	needed := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if !mountsAt(c.VolumeMounts, TokenMountPath) {
				c.VolumeMounts = append(c.VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

func mountsAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// TokenVolumeSource is the projection of the automatic token volume: a
// bound token for the API's audience, the cluster CA and the namespace,
// with the default mode set explicitly as upstream does.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](tokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			}}},
		},
	}
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
	_, err := p.lookup(ctx, a, pod.Spec.ServiceAccountName)
	return err
}

// lookup refuses a pod whose service account does not exist, creating the
// namespace's "default" account if that is the one missing (nil then: a
// new account sets nothing).
func (p *Plugin) lookup(ctx context.Context, a *admission.Attributes, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.accounts.GetServiceAccount(ctx, a.Namespace, name)
	if apierrors.IsNotFound(err) && name == DefaultName && !a.DryRun {
		sa, err = nil, p.ensureDefault(ctx, a.Namespace)
	}
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.Name,
			fmt.Errorf("error looking up service account %s/%s: serviceaccount %q not found", a.Namespace, name, name))
	}
	if err != nil {
		return nil, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, name, err)
	}
	return sa, nil
}

func (p *Plugin) ensureDefault(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: ns}}
	if err := p.accounts.CreateServiceAccount(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
