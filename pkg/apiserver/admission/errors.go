package admission

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// refusal turns a plugin's error into the Status the client sees: an API
// status error keeps its code, anything else is 403 Forbidden naming the plugin.
func refusal(plugin string, a *Attributes, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	gr := a.Resource.GroupVersionResource().GroupResource()
	return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("admission plugin %q denied the request: %w", plugin, err))
}
