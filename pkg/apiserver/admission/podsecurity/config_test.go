package podsecurity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const admissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: v1.36
    exemptions:
      usernames: ["system:serviceaccount:kube-system:installer"]
      runtimeClasses: ["kata"]
      namespaces: ["kube-system"]
`

// As upstream, a PodSecurity configuration sets the levels of namespaces
// without labels and exempts users, runtime classes and namespaces.
func TestConfigDefaultsAndExemptions(t *testing.T) {
	c, err := LoadConfig(writeFile(t, t.TempDir(), "admission.yaml", admissionConfig))
	if err != nil {
		t.Fatal(err)
	}
	namespaces := fakeNamespaces{
		"ns":          &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}},
		"kube-system": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		"open":        &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open", Labels: map[string]string{EnforceLabel: Privileged}}},
	}
	p := New(namespaces, WithConfig(c))
	kata := "kata"
	tests := []struct {
		name, ns, user string
		pod            *corev1.Pod
		wantErr        string
	}{
		{"unlabelled namespace gets the default level", "ns", "alice", podWith(privilegedContainer),
			`pods "x" is forbidden: violates PodSecurity "baseline:v1.36": privileged`},
		{"a label overrides the default", "open", "alice", podWith(privilegedContainer), ""},
		{"exempt namespace", "kube-system", "alice", podWith(privilegedContainer), ""},
		{"exempt user", "ns", "system:serviceaccount:kube-system:installer", podWith(privilegedContainer), ""},
		{"exempt runtime class", "ns", "alice", podWith(func(p *corev1.Pod) {
			privilegedContainer(p)
			p.Spec.RuntimeClassName = &kata
		}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: pods,
				Namespace: tt.ns, Name: "x", Object: tt.pod, User: &request.User{Name: tt.user}})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want Forbidden with %q", err, tt.wantErr)
			}
		})
	}

	// Labelling an exempt namespace warns that the labels do nothing.
	header, ctx := recordWarnings(context.Background())
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{EnforceLabel: Restricted}}}
	if err := p.Validate(ctx, &admission.Attributes{Operation: admission.Create, Resource: nsRes, Name: "kube-system", Object: labelled}); err != nil {
		t.Fatal(err)
	}
	want := `namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:v1.36) will be ignored`
	if got := warnings(t, header); len(got) != 1 || got[0] != want {
		t.Errorf("warnings %q, want [%q]", got, want)
	}
}

// The configuration may live in its own file, named relative to the
// AdmissionConfiguration; without a PodSecurity entry nothing changes.
func TestConfigFromPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "podsecurity.yaml", `apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  warn: restricted
`)
	c, err := LoadConfig(writeFile(t, dir, "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: podsecurity.yaml
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults{Enforce: Privileged, EnforceVersion: "latest", Audit: Privileged, AuditVersion: "latest", Warn: Restricted, WarnVersion: "latest"}
	if c.Defaults != want {
		t.Errorf("defaults %+v, want %+v", c.Defaults, want)
	}
	c, err = LoadConfig(writeFile(t, dir, "other.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n"))
	if err != nil || c.Defaults != (Defaults{}) || len(c.Exemptions.Namespaces) != 0 {
		t.Errorf("without PodSecurity: %+v, %v", c, err)
	}
}

// A bad file is refused on one line naming the file and the field.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n" +
		"    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n"
	tests := []struct{ name, text, want string }{
		{"bad level", head + "    defaults:\n      enforce: strict\n",
			`defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted`},
		{"bad version", head + "    defaults:\n      warn-version: \"1.36\"\n",
			`defaults.warn-version: Invalid value: "1.36": must be "latest" or "v1.x"`},
		{"duplicate namespace", head + "    exemptions:\n      namespaces: [a, a]\n", `exemptions.namespaces[1]: Duplicate value: "a"`},
		{"bad runtime class", head + "    exemptions:\n      runtimeClasses: [Kata]\n", `exemptions.runtimeClasses[0]: Invalid value: "Kata"`},
		{"empty username", head + "    exemptions:\n      usernames: [\"\"]\n", `exemptions.usernames[0]: Invalid value: "": username must not be empty`},
		{"misspelt field", head + "    exemption:\n      namespaces: [a]\n", `unknown field "exemption"`},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", `apiVersion "v1" kind "ConfigMap": want AdmissionConfiguration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml", tt.text)
			_, err := LoadConfig(path)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q, want one line naming %s and %q", msg, path, tt.want)
			}
		})
	}
}
