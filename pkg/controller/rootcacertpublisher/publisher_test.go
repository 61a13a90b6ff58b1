package rootcacertpublisher

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

const bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestSync(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	cm := func(data map[string]string, annotations map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "team", Annotations: annotations}, Data: data}
	}
	described := map[string]string{DescriptionAnnotation: Description}
	tests := []struct {
		name       string
		objs       []runtime.Object
		wantWrites []string
	}{
		{name: "new namespace gets the ConfigMap", objs: []runtime.Object{active}, wantWrites: []string{"create configmaps"}},
		{name: "correct ConfigMap is left alone", objs: []runtime.Object{active, cm(map[string]string{Key: bundle}, described)}},
		{name: "edited bundle is restored", objs: []runtime.Object{active, cm(map[string]string{Key: "junk", "extra": "x"}, described)}, wantWrites: []string{"update configmaps"}},
		{name: "a missing description is restored", objs: []runtime.Object{active, cm(map[string]string{Key: bundle}, nil)}, wantWrites: []string{"update configmaps"}},
		{name: "terminating namespace gets nothing", objs: []runtime.Object{terminating}},
		{name: "deleted namespace gets nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := controllertest.NewClientset(tt.objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			p := New(client, f.Core().V1().ConfigMaps(), f.Core().V1().Namespaces(), []byte(bundle), nil)
			for _, o := range tt.objs {
				switch o := o.(type) {
				case *corev1.Namespace:
					_ = f.Core().V1().Namespaces().Informer().GetIndexer().Add(o)
				case *corev1.ConfigMap:
					_ = f.Core().V1().ConfigMaps().Informer().GetIndexer().Add(o)
				}
			}
			if err := p.sync(context.Background(), "team"); err != nil {
				t.Fatal(err)
			}
			if got := controllertest.Writes(client); !slices.Equal(got, tt.wantWrites) {
				t.Fatalf("writes %v, want %v", got, tt.wantWrites)
			}
			if len(tt.wantWrites) == 0 {
				return
			}
			got, err := client.CoreV1().ConfigMaps("team").Get(context.Background(), ConfigMapName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Data) != 1 || got.Data[Key] != bundle || got.Annotations[DescriptionAnnotation] != Description {
				t.Errorf("ConfigMap data %v annotations %v: want only ca.crt with the bundle, and upstream's description", got.Data, got.Annotations)
			}
		})
	}
}
