package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

func table(c clock.PassiveClock) registry.TableConvertor {
	docs := corev1.ServiceSpec{}.SwaggerDoc()
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Type", "string", 0, docs["type"]),
		tableutil.Column("Cluster-IP", "string", 0, docs["clusterIP"]),
		tableutil.Column("External-IP", "string", 0, docs["externalIPs"]),
		tableutil.Column("Port(s)", "string", 0, docs["ports"]),
		tableutil.AgeColumn(),
		tableutil.Column("Selector", "string", 1, docs["selector"]),
	}
	return tableutil.New(cols, func(s *corev1.Service) []interface{} {
		clusterIP := tableutil.None
		switch {
		case len(s.Spec.ClusterIPs) > 0:
			clusterIP = s.Spec.ClusterIPs[0]
		case s.Spec.ClusterIP != "":
			clusterIP = s.Spec.ClusterIP
		}
		portsCell := portString(s.Spec.Ports)
		if portsCell == "" {
			portsCell = tableutil.None
		}
		return []interface{}{
			s.Name, string(s.Spec.Type), clusterIP, externalIP(s), portsCell,
			tableutil.Age(s.CreationTimestamp, c.Now()), labels.FormatLabels(s.Spec.Selector),
		}
	})
}

// externalIP is what kubectl shows as EXTERNAL-IP: external IPs, the load
// balancer's addresses (<pending> until it has some), or the external name.
func externalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return tableutil.None
	case corev1.ServiceTypeLoadBalancer:
		lb := sets.New[string]()
		for _, ing := range s.Status.LoadBalancer.Ingress {
			switch {
			case ing.IP != "":
				lb.Insert(ing.IP)
			case ing.Hostname != "":
				lb.Insert(ing.Hostname)
			}
		}
		ips := append(sets.List(lb), s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return tableutil.Unknown
}

func portString(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}
