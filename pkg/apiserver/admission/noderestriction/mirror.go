package noderestriction

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// mirrorPod checks what upstream checks of a mirror pod a node creates: it
// is owned by the node (so that it goes when the node does) and uses no
// API object, which the node could otherwise read through it.
func (p *Plugin) mirrorPod(ctx context.Context, node string, pod *corev1.Pod) error {
	refs := pod.OwnerReferences
	switch {
	case len(refs) > 1:
		return fmt.Errorf("node %q can only create pods with a single owner reference set to itself", node)
	case len(refs) == 0:
		return fmt.Errorf("node %q can only create pods with an owner reference set to itself", node)
	}
	owner := refs[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != node {
		return fmt.Errorf("node %q can only create pods with an owner reference set to itself", node)
	}
	if owner.Controller == nil || !*owner.Controller {
		return fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", node)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", node)
	}
	n, err := p.nodes.GetNode(ctx, node)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("error looking up node %s to verify uid: %w", node, err)
	}
	if owner.UID != n.UID {
		return fmt.Errorf("node %s UID mismatch: expected %s got %s", node, owner.UID, n.UID)
	}
	if what := apiReference(pod); what != "" {
		return fmt.Errorf("node %q can not create pods that reference %s", node, what)
	}
	return nil
}

// apiReference names the first kind of API object pod uses, in upstream's
// order and words, or "" when it uses none.
func apiReference(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return "serviceaccounts"
	}
	if usesSecrets(pod) {
		return "secrets"
	}
	if usesConfigMaps(pod) {
		return "configmaps"
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)"
		case v.Secret != nil:
			return "secrets (via secret volumes)"
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)"
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)"
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims"
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)"
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)"
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return "configmaps (via projected volumes)"
				case s.Secret != nil:
					return "secrets (via projected volumes)"
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)"
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				case s.PodCertificate != nil:
					return "podcertificates"
				}
			}
		}
	}
	return ""
}

func allContainers(pod *corev1.Pod) []corev1.Container {
	cs := append([]corev1.Container{}, pod.Spec.InitContainers...)
	cs = append(cs, pod.Spec.Containers...)
	for _, e := range pod.Spec.EphemeralContainers {
		cs = append(cs, corev1.Container(e.EphemeralContainerCommon))
	}
	return cs
}

// usesSecrets reports a secret named anywhere: pull secrets, environment,
// or a volume's secret reference. An empty name names nothing, as
// upstream's visitors skip it.
func usesSecrets(pod *corev1.Pod) bool {
	var names []string
	for _, r := range pod.Spec.ImagePullSecrets {
		names = append(names, r.Name)
	}
	for _, c := range allContainers(pod) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				names = append(names, e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				names = append(names, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			names = append(names, r.Name)
		}
	}
	for _, v := range pod.Spec.Volumes {
		src := v.VolumeSource
		switch {
		case src.Secret != nil:
			names = append(names, src.Secret.SecretName)
		case src.AzureFile != nil:
			names = append(names, src.AzureFile.SecretName)
		case src.CephFS != nil:
			ref(src.CephFS.SecretRef)
		case src.Cinder != nil:
			ref(src.Cinder.SecretRef)
		case src.FlexVolume != nil:
			ref(src.FlexVolume.SecretRef)
		case src.RBD != nil:
			ref(src.RBD.SecretRef)
		case src.ScaleIO != nil:
			ref(src.ScaleIO.SecretRef)
		case src.ISCSI != nil:
			ref(src.ISCSI.SecretRef)
		case src.StorageOS != nil:
			ref(src.StorageOS.SecretRef)
		case src.CSI != nil:
			ref(src.CSI.NodePublishSecretRef)
		case src.Projected != nil:
			for _, s := range src.Projected.Sources {
				if s.Secret != nil {
					names = append(names, s.Secret.Name)
				}
			}
		}
	}
	return anyNamed(names)
}

// usesConfigMaps reports a config map named in the environment or a volume.
func usesConfigMaps(pod *corev1.Pod) bool {
	var names []string
	for _, c := range allContainers(pod) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				names = append(names, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				names = append(names, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			names = append(names, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					names = append(names, s.ConfigMap.Name)
				}
			}
		}
	}
	return anyNamed(names)
}

func anyNamed(names []string) bool {
	for _, n := range names {
		if n != "" {
			return true
		}
	}
	return false
}
