package autoscale

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServesHPA(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{}, "")
	tests := []struct {
		name      string
		resources *metav1.APIResourceList
		err       error
		want      string
	}{
		{"served", &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "horizontalpodautoscalers"}, {Name: "horizontalpodautoscalers/status"}}}, nil, ""},
		{"group not served", nil, notFound,
			"autoscale creates autoscaling/v2 horizontalpodautoscalers, which the server does not serve: GET /apis/autoscaling/v2: " + notFound.Error()},
		{"group without the resource", &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "horizontalpodautoscalers/status"}}}, nil,
			"autoscale creates autoscaling/v2 horizontalpodautoscalers, which the server does not serve"},
	}
	for _, tt := range tests {
		err := servesHPA(tt.resources, tt.err)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: error %q, want %q", tt.name, got, tt.want)
		}
		if tt.err != nil && !errors.Is(err, tt.err) {
			t.Errorf("%s: the server's error is not wrapped: %v", tt.name, err)
		}
	}
}
