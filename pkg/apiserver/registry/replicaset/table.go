package replicaset

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// table renders `kubectl get replicasets` as upstream:
// NAME DESIRED CURRENT READY AGE, wide adds CONTAINERS IMAGES SELECTOR.
func table(c clock.PassiveClock) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Desired", "integer", 0, appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		tableutil.Column("Current", "integer", 0, appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		tableutil.Column("Ready", "integer", 0, appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		tableutil.AgeColumn(),
		tableutil.Column("Containers", "string", 1, "Names of each container in the template."),
		tableutil.Column("Images", "string", 1, "Images referenced by each container in the template."),
		tableutil.Column("Selector", "string", 1, appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
	}
	return tableutil.New(cols, func(rs *appsv1.ReplicaSet) []interface{} {
		names, images := tableutil.ContainersAndImages(rs.Spec.Template.Spec.Containers)
		return []interface{}{
			rs.Name,
			int64(ptr.Deref(rs.Spec.Replicas, 0)),
			int64(rs.Status.Replicas),
			int64(rs.Status.ReadyReplicas),
			tableutil.Age(rs.CreationTimestamp, c.Now()),
			names,
			images,
			metav1.FormatLabelSelector(rs.Spec.Selector),
		}
	})
}
