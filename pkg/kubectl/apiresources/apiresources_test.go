package apiresources

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSortByGroupThenName(t *testing.T) {
	r := func(group, name string) Resource {
		return Resource{GroupVersion: schema.GroupVersion{Group: group, Version: "v1"}, APIResource: metav1.APIResource{Name: name}}
	}
	rows := []Resource{r("apps", "replicasets"), r("", "pods"), r("apps", "deployments"), r("", "configmaps"), r("batch", "jobs")}
	Sort(rows, "")
	want := []string{"/configmaps", "/pods", "apps/deployments", "apps/replicasets", "batch/jobs"}
	for i, row := range rows {
		if got := row.GroupVersion.Group + "/" + row.Name; got != want[i] {
			t.Fatalf("row %d = %s, want %s (all: %v)", i, got, want[i], rows)
		}
	}
}

func TestSortByKind(t *testing.T) {
	r := func(group, name, kind string) Resource {
		return Resource{GroupVersion: schema.GroupVersion{Group: group, Version: "v1"}, APIResource: metav1.APIResource{Name: name, Kind: kind}}
	}
	rows := []Resource{r("apps", "replicasets", "ReplicaSet"), r("", "pods", "Pod"), r("batch", "jobs", "Job")}
	Sort(rows, "kind")
	if rows[0].Kind != "Job" || rows[1].Kind != "Pod" || rows[2].Kind != "ReplicaSet" {
		t.Fatalf("by kind: %v", rows)
	}
}
