package proxy

import (
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The informers keep every Service and EndpointSlice of the cluster for
// the proxy's whole life; these transforms keep only what the rules and
// the metrics read (managedFields, selectors, status, target refs, hints
// and most annotations are most of an object), so that a node's proxy
// holds a fraction of what the apiserver sends.

// slim is the informers' cache.TransformFunc; a tombstone or another type
// passes unchanged.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Service:
		return slimService(o), nil
	case *discoveryv1.EndpointSlice:
		return slimEndpointSlice(o), nil
	}
	return obj, nil
}

// slimObjectMeta keeps what the informer's store and the proxy need (the
// resource version tells a changed object from a resync), and the one
// label and annotation asked for, if any.
func slimObjectMeta(m metav1.ObjectMeta, label, annotation string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, ResourceVersion: m.ResourceVersion}
	if v, ok := m.Labels[label]; ok && label != "" {
		out.Labels = map[string]string{label: v}
	}
	if v, ok := m.Annotations[annotation]; ok && annotation != "" {
		out.Annotations = map[string]string{annotation: v}
	}
	return out
}

// slimService keeps the Service's fields the rules read.
func slimService(svc *v1.Service) *v1.Service {
	out := &v1.Service{
		ObjectMeta: slimObjectMeta(svc.ObjectMeta, "", ""),
		Spec: v1.ServiceSpec{
			Type:                  svc.Spec.Type,
			ClusterIP:             svc.Spec.ClusterIP,
			ExternalTrafficPolicy: svc.Spec.ExternalTrafficPolicy,
			InternalTrafficPolicy: svc.Spec.InternalTrafficPolicy,
			SessionAffinity:       svc.Spec.SessionAffinity,
			SessionAffinityConfig: svc.Spec.SessionAffinityConfig,
		},
	}
	out.Spec.Ports = make([]v1.ServicePort, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		out.Spec.Ports[i] = v1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, NodePort: p.NodePort}
	}
	return out
}

// slimEndpointSlice keeps the slice's Service, endpoints and ports, and
// the controller's last-change-trigger-time, which the network programming
// latency is measured from.
func slimEndpointSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{
		ObjectMeta:  slimObjectMeta(s.ObjectMeta, discoveryv1.LabelServiceName, v1.EndpointsLastChangeTriggerTime),
		AddressType: s.AddressType,
		Ports:       s.Ports,
		Endpoints:   make([]discoveryv1.Endpoint, len(s.Endpoints)),
	}
	for i, ep := range s.Endpoints {
		e := discoveryv1.Endpoint{Conditions: ep.Conditions, NodeName: ep.NodeName}
		if len(ep.Addresses) > 0 {
			// Only the first is used, as upstream: the API says they are
			// fungible.
			e.Addresses = []string{ep.Addresses[0]}
		}
		out.Endpoints[i] = e
	}
	return out
}
