package kubelet

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// serviceLister lists the cluster's Services (an informer's lister).
type serviceLister interface {
	List(selector labels.Selector) ([]*v1.Service, error)
}

// errServicesNotRead keeps a container from starting without the Service
// variables a kubelet that has just started has not read yet (upstream's
// words): KUBERNETES_SERVICE_HOST above all, which in-cluster clients need.
var errServicesNotRead = errors.New("services have not yet been read at least once, cannot construct envvars")

// serviceEnv is the Service variables of pod's containers, from the
// kubelet's Service informer.
func (kl *Kubelet) serviceEnv(pod *v1.Pod) ([]v1.EnvVar, error) {
	if kl.servicesSynced != nil && !kl.servicesSynced() {
		return nil, errServicesNotRead
	}
	services, err := kl.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return serviceEnvVars(services, pod.Namespace, links), nil
}

// apiServiceName is the Service of the API in the default namespace, whose
// variables every pod gets, whatever its enableServiceLinks.
const apiServiceName = "kubernetes"

// serviceEnvVars are the variables upstream's kubelet gives a container in
// namespace ns: those of the `kubernetes` Service in default always, and
// with links (enableServiceLinks) those of every Service of ns, which win
// over default's for the same name. Services without a cluster IP
// (headless) have none. Each Service gives, as upstream's
// envvars.FromServices, <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT (its
// first port), <NAME>_SERVICE_PORT_<PORTNAME> for each named port, and
// Docker's link variables <NAME>_PORT and <NAME>_PORT_<port>_<PROTO>
// with _PROTO, _PORT and _ADDR; NAME is the upper-cased name with '-' as
// '_'. Services come in name order, so that the list is the same at each
// start.
func serviceEnvVars(services []*v1.Service, ns string, links bool) []v1.EnvVar {
	byName := map[string]*v1.Service{}
	for _, s := range services {
		if !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == ns && links:
			byName[s.Name] = s
		case s.Namespace == metav1.NamespaceDefault && s.Name == apiServiceName:
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []v1.EnvVar
	for _, n := range names {
		out = append(out, serviceVars(byName[n])...)
	}
	return out
}

func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone && len(s.Spec.Ports) > 0
}

func serviceVars(s *v1.Service) []v1.EnvVar {
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	out := []v1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			v1.EnvVar{Name: pp, Value: url},
			v1.EnvVar{Name: pp + "_PROTO", Value: strings.ToLower(proto)},
			v1.EnvVar{Name: pp + "_PORT", Value: port},
			v1.EnvVar{Name: pp + "_ADDR", Value: ip},
		)
	}
	return out
}
