// Package rootcacertpublisher keeps the kube-root-ca.crt ConfigMap, holding
// the cluster's CA bundle, in every namespace, as upstream's root CA
// certificate publisher: pods read it (through their service-account token
// volume) to verify the apiserver.
package rootcacertpublisher

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "root-ca-cert-publisher"

const (
	// ConfigMapName is the ConfigMap kept in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// Key is the ConfigMap key holding the PEM bundle.
	Key = "ca.crt"
	// DescriptionAnnotation and Description are upstream's, word for word.
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Publisher reconciles kube-root-ca.crt per namespace.
type Publisher struct {
	client     kubernetes.Interface
	rootCA     string
	configMaps corelisters.ConfigMapLister
	namespaces corelisters.NamespaceLister
	synced     []cache.InformerSynced
	queue      controllerutil.Queue
}

// New wires the publisher to the shared informers; rootCA is the PEM bundle
// to publish.
func New(client kubernetes.Interface, cmInformer coreinformers.ConfigMapInformer, nsInformer coreinformers.NamespaceInformer,
	rootCA []byte, mp workqueue.MetricsProvider) *Publisher {
	p := &Publisher{
		client:     client,
		rootCA:     string(rootCA),
		configMaps: cmInformer.Lister(),
		namespaces: nsInformer.Lister(),
		synced:     []cache.InformerSynced{cmInformer.Informer().HasSynced, nsInformer.Informer().HasSynced},
		queue:      controllerutil.NewQueue(Name, mp),
	}
	onConfigMap := func(obj any) {
		if cm, ok := controllerutil.FromDeleted[*corev1.ConfigMap](obj); ok && cm.Name == ConfigMapName {
			p.queue.Add(cm.Namespace)
		}
	}
	_, _ = cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { onConfigMap(obj) },
		DeleteFunc: onConfigMap,
	})
	onNamespace := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase != corev1.NamespaceTerminating {
			p.queue.Add(ns.Name)
		}
	}
	_, _ = nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onNamespace,
		UpdateFunc: func(_, obj any) { onNamespace(obj) },
	})
	return p
}

// Run processes namespaces with workers goroutines until ctx ends.
func (p *Publisher) Run(ctx context.Context, workers int) {
	defer p.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, p.synced...) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, p.queue, workers, p.sync)
}

func (p *Publisher) sync(ctx context.Context, ns string) error {
	if n, err := p.namespaces.Get(ns); apierrors.IsNotFound(err) || (err == nil && n.Status.Phase == corev1.NamespaceTerminating) {
		return nil // a namespace on its way out takes no new objects
	}
	cm, err := p.configMaps.ConfigMaps(ns).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = p.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       map[string]string{Key: p.rootCA},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // gone, or our cache is behind: its event brings us back
		}
		if err != nil {
			return fmt.Errorf("create %s/%s: %w", ns, ConfigMapName, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	want := map[string]string{Key: p.rootCA}
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s/%s: %w", ns, ConfigMapName, err)
	}
	return nil
}
