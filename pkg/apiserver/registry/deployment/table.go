package deployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// table renders `kubectl get deployments` as upstream:
// NAME READY UP-TO-DATE AVAILABLE AGE, wide adds CONTAINERS IMAGES SELECTOR.
func table(c clock.PassiveClock) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Ready", "string", 0, "Number of the pod with ready state"),
		tableutil.Column("Up-to-date", "integer", 0, appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		tableutil.Column("Available", "integer", 0, appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		tableutil.AgeColumn(),
		tableutil.Column("Containers", "string", 1, "Names of each container in the template."),
		tableutil.Column("Images", "string", 1, "Images referenced by each container in the template."),
		tableutil.Column("Selector", "string", 1, appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
	}
	return tableutil.New(cols, func(d *appsv1.Deployment) []interface{} {
		names, images := tableutil.ContainersAndImages(d.Spec.Template.Spec.Containers)
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		return []interface{}{
			d.Name,
			fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, ptr.Deref(d.Spec.Replicas, 0)),
			int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas),
			tableutil.Age(d.CreationTimestamp, c.Now()),
			names,
			images,
			selector,
		}
	})
}
