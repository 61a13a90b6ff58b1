package serviceaccount

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

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

// A pod gets the kube-api-access volume and its read-only mount in every
// container and init container unless its account or itself opts out, a
// container already mounts something at the path, or it is a mirror pod.
func TestTokenVolume(t *testing.T) {
	no, yes := ptr.To(false), ptr.To(true)
	mounted := corev1.VolumeMount{Name: TokenVolumePrefix + "abcde", ReadOnly: true, MountPath: TokenMountPath}
	own := corev1.VolumeMount{Name: "mine", MountPath: TokenMountPath}
	tests := []struct {
		name   string
		sa     *corev1.ServiceAccount
		pod    func(*corev1.Pod)
		volume bool
		// mounts are each container's (init containers first) mounts at the path.
		mounts []corev1.VolumeMount
	}{
		{"added", &corev1.ServiceAccount{}, nil, true, []corev1.VolumeMount{mounted, mounted, mounted}},
		{"account created for the pod", nil, nil, true, []corev1.VolumeMount{mounted, mounted, mounted}},
		{"account opts out", &corev1.ServiceAccount{AutomountServiceAccountToken: no}, nil, false, []corev1.VolumeMount{{}, {}, {}}},
		{"pod opts out", &corev1.ServiceAccount{}, func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = no }, false, []corev1.VolumeMount{{}, {}, {}}},
		{"pod opts in over its account", &corev1.ServiceAccount{AutomountServiceAccountToken: no},
			func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = yes }, true, []corev1.VolumeMount{mounted, mounted, mounted}},
		{"one container mounts its own", &corev1.ServiceAccount{},
			func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{own} }, true, []corev1.VolumeMount{mounted, own, mounted}},
		{"every container mounts its own", &corev1.ServiceAccount{}, func(p *corev1.Pod) {
			for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
				for i := range list {
					list[i].VolumeMounts = []corev1.VolumeMount{own}
				}
			}
		}, false, []corev1.VolumeMount{own, own, own}},
		{"mirror pod", &corev1.ServiceAccount{}, func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorAnnotation: "x"} }, false, []corev1.VolumeMount{{}, {}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accounts := fakeAccounts{}
			if tt.sa != nil {
				accounts["ns/default"] = tt.sa
			}
			p := New(accounts)
			p.suffix = func() string { return "abcde" }
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "init"}},
					Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
				},
			}
			if tt.pod != nil {
				tt.pod(pod)
			}
			a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: pod}
			if err := p.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			var want []corev1.Volume
			if tt.volume {
				want = []corev1.Volume{{Name: mounted.Name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptr.To[int32](0o644),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
						{ConfigMap: &corev1.ConfigMapProjection{
							LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
						}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
							{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
						}}},
					},
				}}}}
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec.Volumes, want) {
				t.Errorf("volumes %+v, want %+v", pod.Spec.Volumes, want)
			}
			var got []corev1.VolumeMount
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				m := corev1.VolumeMount{}
				for _, vm := range c.VolumeMounts {
					if vm.MountPath == TokenMountPath {
						m = vm
					}
				}
				got = append(got, m)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.mounts) {
				t.Errorf("mounts at %s %+v, want %+v", TokenMountPath, got, tt.mounts)
			}
		})
	}
}

// A pod that already has a kube-api-access volume keeps it and gets no
// second one; containers lacking the mount are given that volume's.
func TestTokenVolumeKeptWhenPresent(t *testing.T) {
	p := New(fakeAccounts{"ns/default": &corev1.ServiceAccount{}})
	p.suffix = func() string { return "zzzzz" }
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: TokenVolumePrefix + "old12", VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}}},
			Containers: []corev1.Container{{Name: "a"}},
		},
	}
	a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: pod}
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Name != TokenVolumePrefix+"old12" {
		t.Fatalf("volumes %+v", pod.Spec.Volumes)
	}
	if m := pod.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != TokenVolumePrefix+"old12" {
		t.Fatalf("mounts %+v", m)
	}
}

// The random part of the volume's name is upstream's: 5 characters.
func TestTokenVolumeNameIsRandom(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: pod}
	if err := New(fakeAccounts{}).Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if n := pod.Spec.Volumes[0].Name; !strings.HasPrefix(n, "kube-api-access-") || len(n) != len("kube-api-access-")+5 {
		t.Fatalf("volume name %q", n)
	}
}

// An apiserver that cannot issue tokens adds no token volume.
func TestNoTokenVolumeWithoutTokenIssuing(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	a := &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: pod}
	p := New(fakeAccounts{}, WithTokenIssuing(func() bool { return false }))
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 0 {
		t.Fatalf("volumes %+v, mounts %+v", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
	}
}
