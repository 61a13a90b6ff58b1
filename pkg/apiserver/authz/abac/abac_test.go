package abac

import (
	"context"
	"strings"
	"testing"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

const policies = `
# comments and blank lines are fine

{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"*","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"projectCaribou","resource":"pods","apiGroup":"*","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","readonly":true,"nonResourcePath":"/version*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*","readonly":true,"resource":"nodes","apiGroup":""}}
`

func TestABAC(t *testing.T) {
	z, err := Parse(strings.NewReader(policies))
	if err != nil {
		t.Fatal(err)
	}
	res := func(user, verb, group, resource, ns string) authz.Attributes {
		return authz.Attributes{User: &request.User{Name: user, Groups: []string{"system:authenticated"}}, ResourceRequest: true,
			Verb: verb, APIGroup: group, Resource: resource, Namespace: ns}
	}
	cases := []struct {
		name string
		a    authz.Attributes
		want authz.Decision
	}{
		{"alice anything namespaced", res("alice", "delete", "apps", "deployments", "x"), authz.Allow},
		{"namespace * covers cluster scope too", res("alice", "delete", "", "nodes", ""), authz.Allow},
		{"bob reads pods in his namespace", res("bob", "list", "", "pods", "projectCaribou"), authz.Allow},
		{"bob is read-only", res("bob", "create", "", "pods", "projectCaribou"), authz.NoOpinion},
		{"bob elsewhere", res("bob", "get", "", "pods", "other"), authz.NoOpinion},
		{"bob other resource", res("bob", "get", "", "secrets", "projectCaribou"), authz.NoOpinion},
		{"user * reads nodes", res("carl", "get", "", "nodes", ""), authz.Allow},
		{"an empty namespace in a policy is cluster scope only", res("carl", "get", "", "nodes", "x"), authz.NoOpinion},
		{"group reads a path glob", authz.Attributes{User: &request.User{Name: "dan", Groups: []string{"system:authenticated"}}, Verb: "get", Path: "/version/"}, authz.Allow},
		{"path not covered", authz.Attributes{User: &request.User{Name: "dan", Groups: []string{"system:authenticated"}}, Verb: "get", Path: "/metrics"}, authz.NoOpinion},
		{"path write is not read-only", authz.Attributes{User: &request.User{Name: "dan", Groups: []string{"system:authenticated"}}, Verb: "post", Path: "/version"}, authz.NoOpinion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d, _, _ := z.Authorize(context.Background(), tc.a); d != tc.want {
				t.Fatalf("got %s, want %s", d, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"not json":         `{"apiVersion":`,
		"wrong version":    `{"apiVersion":"abac.authorization.kubernetes.io/v0","kind":"Policy","spec":{"user":"a"}}`,
		"no subject":       `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"resource":"*"}}`,
		"misspelled field": `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"a","namespce":"x"}}`,
	}
	for name, in := range cases {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: want an error naming line 1, got %v", name, err)
		}
	}
}
