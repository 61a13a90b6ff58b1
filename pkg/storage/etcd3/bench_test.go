package etcd3

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/etcd"
)

func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: "6f1c1a55-0000-4000-8000-000000000000",
			Labels: map[string]string{"app": "bench", "tier": "backend"}, CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.local/bench:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
	}
}

// BenchmarkCreate measures Create of a typical pod against an embedded etcd
// with fsync on, through gRPC (as with an external etcd) and through the
// in-process client (the embedded default), at 1, 8 and 32 concurrent
// clients.
func BenchmarkCreate(b *testing.B) {
	e, err := etcd.StartEmbedded(context.Background(), etcd.EmbeddedConfig{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	remote, err := etcd.NewClient(context.Background(), etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		b.Fatal(err)
	}
	defer remote.Close()
	local := e.InProcessClient()
	defer local.Close()

	scheme := api.NewScheme()
	codec := NewStorageCodec(scheme, corev1.SchemeGroupVersion)
	var seq atomic.Int64
	// The raw transaction Create sends, with the pod's encoded bytes: the
	// floor under the storage layer.
	encoded, err := kruntime.Encode(codec, benchPod("raw"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client *clientv3.Client
	}{{"grpc", remote}, {"inprocess", local}} {
		for _, clients := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("raw-txn/%s/clients=%d", c.name, clients), func(b *testing.B) {
				ctx := context.Background()
				b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						k := fmt.Sprintf("/raw-%s/pods/bench/pod-%d", c.name, seq.Add(1))
						_, err := c.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
							Then(clientv3.OpPut(k, string(encoded))).Commit()
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
		}
	}
	for _, c := range []struct {
		name   string
		client *clientv3.Client
	}{{"grpc", remote}, {"inprocess", local}} {
		s := New(c.client, codec, "/bench-"+c.name, func() kruntime.Object { return &corev1.Pod{} })
		for _, clients := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/clients=%d", c.name, clients), func(b *testing.B) {
				ctx := context.Background()
				p := max(1, clients/runtime.GOMAXPROCS(0))
				b.SetParallelism(p)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						name := fmt.Sprintf("pod-%d", seq.Add(1))
						// As the apiserver does: the request's object receives
						// the stored state.
						pod := benchPod(name)
						if err := s.Create(ctx, "/pods/bench/"+name, pod, pod); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
		}
	}
}

// BenchmarkGuaranteedUpdate measures updates (as a binding or a status
// update does) of 256 pods by 32 concurrent clients, through the in-process
// client with fsync on.
func BenchmarkGuaranteedUpdate(b *testing.B) {
	e, err := etcd.StartEmbedded(context.Background(), etcd.EmbeddedConfig{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	c := e.InProcessClient()
	defer c.Close()
	s := New(c, NewStorageCodec(api.NewScheme(), corev1.SchemeGroupVersion), "/bench", func() kruntime.Object { return &corev1.Pod{} })
	ctx := context.Background()
	const pods = 256
	for i := range pods {
		name := fmt.Sprintf("pod-%d", i)
		if err := s.Create(ctx, "/pods/bench/"+name, benchPod(name), nil); err != nil {
			b.Fatal(err)
		}
	}
	var seq atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			key := fmt.Sprintf("/pods/bench/pod-%d", n%pods)
			err := s.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, nil, func(cur kruntime.Object) (kruntime.Object, error) {
				pod := cur.(*corev1.Pod)
				pod.Spec.NodeName = fmt.Sprintf("node-%d", n)
				return pod, nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
