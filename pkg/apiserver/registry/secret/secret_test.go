package secret

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestDefault(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"a": []byte("old"), "b": []byte("keep")}, StringData: map[string]string{"a": "new"}}
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Default(s)
	if s.Type != corev1.SecretTypeOpaque {
		t.Errorf("type = %q, want Opaque", s.Type)
	}
	want := map[string][]byte{"a": []byte("new"), "b": []byte("keep")}
	if !reflect.DeepEqual(s.Data, want) || s.StringData != nil {
		t.Errorf("data = %q stringData = %q, want %q and none", s.Data, s.StringData, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		s    corev1.Secret
		want []string
	}{
		{"opaque", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("x")}}, nil},
		{"bad key", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"..": nil}}, []string{`data[..]: Invalid value: ".."`}},
		{"tls without key", corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c")}},
			[]string{"data[tls.key]: Required value"}},
		{"dockerconfigjson not json", corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}},
			[]string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>"`}},
		{"sa token without annotation", corev1.Secret{Type: corev1.SecretTypeServiceAccountToken},
			[]string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
		{"too big", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": make([]byte, 1<<20+1)}},
			[]string{"data: Too long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), &tt.s)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %q", errs, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %q, want prefix %q", e.Error(), tt.want[i])
				}
			}
		})
	}
}

func TestTypeIsImmutable(t *testing.T) {
	old := &corev1.Secret{Type: corev1.SecretTypeOpaque}
	s := &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("u")}}
	errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.ValidateUpdate(context.Background(), s, old)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), `type: Invalid value: "kubernetes.io/basic-auth": field is immutable`) {
		t.Fatalf("errors = %v", errs)
	}
}

func TestTableAndAttrs(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns", CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Second))},
		Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{"a": nil, "b": nil},
	}
	cells, err := r.Table.Cells(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"creds", "Opaque", int64(2), "90s"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %v, want %v", cells, want)
	}
	_, fs, err := r.ObjectAttrs(s)
	if err != nil || fs["type"] != "Opaque" || fs["metadata.namespace"] != "ns" {
		t.Errorf("fields = %v, %v", fs, err)
	}
}
