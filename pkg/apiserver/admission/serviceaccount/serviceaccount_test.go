package serviceaccount

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

type fakeAccounts map[string]*corev1.ServiceAccount

var saGR = schema.GroupResource{Resource: "serviceaccounts"}

func (f fakeAccounts) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := f[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(saGR, name)
}

func (f fakeAccounts) CreateServiceAccount(_ context.Context, sa *corev1.ServiceAccount) error {
	key := sa.Namespace + "/" + sa.Name
	if _, ok := f[key]; ok {
		return apierrors.NewAlreadyExists(saGR, sa.Name)
	}
	f[key] = sa
	return nil
}

var (
	podsRes = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Namespaced: true}
	nsRes   = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "namespaces"}
)

func TestPods(t *testing.T) {
	tests := []struct {
		name     string
		accounts fakeAccounts
		pod      *corev1.Pod
		wantSA   string
		wantErr  string
		created  string
	}{
		{"default set and created", fakeAccounts{}, &corev1.Pod{}, "default", "", "ns/default"},
		{"default exists", fakeAccounts{"ns/default": &corev1.ServiceAccount{}}, &corev1.Pod{}, "default", "", ""},
		{"named exists", fakeAccounts{"ns/robot": &corev1.ServiceAccount{}}, &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "robot"}}, "robot", "", ""},
		{"named missing", fakeAccounts{}, &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "robot"}}, "robot",
			`pods "p" is forbidden: error looking up service account ns/robot: serviceaccount "robot" not found`, ""},
		{"mirror pod left alone", fakeAccounts{}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mirrorAnnotation: "x"}}}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.accounts)
			tt.pod.Name, tt.pod.Namespace = "p", "ns"
			a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: tt.pod}
			check := func(phase string, err error) {
				t.Helper()
				if tt.wantErr == "" && err != nil {
					t.Fatalf("%s refused: %v", phase, err)
				}
				if tt.wantErr != "" && (!apierrors.IsForbidden(err) || err.Error() != tt.wantErr) {
					t.Fatalf("%s error %v, want Forbidden %q", phase, err, tt.wantErr)
				}
			}
			// Both phases refuse a missing account, as upstream: the
			// mutating one first, before other plugins' checks.
			check("admit", p.Admit(context.Background(), a))
			if tt.pod.Spec.ServiceAccountName != tt.wantSA {
				t.Errorf("serviceAccountName %q, want %q", tt.pod.Spec.ServiceAccountName, tt.wantSA)
			}
			check("validate", p.Validate(context.Background(), a))
			if tt.created != "" && tt.accounts[tt.created] == nil {
				t.Errorf("%s not created", tt.created)
			}
		})
	}
}

func TestNamespaceGetsDefaultAccount(t *testing.T) {
	f := fakeAccounts{}
	a := &admission.Attributes{Operation: admission.Create, Resource: nsRes, Name: "team", Object: &corev1.Namespace{}}
	if err := New(f).Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if f["team/default"] == nil {
		t.Fatalf("no default account in team: %v", f)
	}
	if err := New(f).Validate(context.Background(), a); err != nil {
		t.Fatalf("second namespace create with the account already there: %v", err)
	}
}
