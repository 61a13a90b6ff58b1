package manager

import (
	"strings"
	"testing"
)

func TestEnabledControllers(t *testing.T) {
	tests := []struct {
		spec    []string
		want    []string
		wantErr string
	}{
		{spec: []string{"*"}, want: KnownControllers()},
		{spec: []string{"*", "-job"}, want: []string{"deployment", "disruption", "endpoint", "endpointslice", "garbagecollector", "namespace", "nodeipam", "nodelifecycle", "podgc", "replicaset", "root-ca-cert-publisher", "ttlafterfinished"}},
		{spec: []string{"deployment", "replicaset"}, want: []string{"deployment", "replicaset"}},
		{spec: []string{"-job", "job"}, want: nil},
		{spec: []string{"*", "-garbage-collector-controller", "-disruption-controller"}, want: []string{"deployment", "endpoint", "endpointslice", "job", "namespace", "nodeipam", "nodelifecycle", "podgc", "replicaset", "root-ca-cert-publisher", "ttlafterfinished"}},
		{spec: []string{"endpoints-controller", "endpointslice-controller", "root-ca-certificate-publisher-controller"}, want: []string{"endpoint", "endpointslice", "root-ca-cert-publisher"}},
		{spec: []string{"*", "-cronjob"}, wantErr: `unknown controller "cronjob"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.spec, ","), func(t *testing.T) {
			got, err := EnabledControllers(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var on []string
			for _, n := range KnownControllers() {
				if got[n] {
					on = append(on, n)
				}
			}
			if strings.Join(on, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("enabled %v, want %v", on, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "defaults", mutate: func(*Options) {}},
		{name: "cidr allocation without a range", mutate: func(o *Options) { o.AllocateNodeCIDRs = true }, wantErr: "needs --cluster-cidr"},
		{name: "bad cidr", mutate: func(o *Options) { o.AllocateNodeCIDRs = true; o.ClusterCIDR = "10.0.0/8" }, wantErr: "--cluster-cidr"},
		{name: "node mask wider than the cluster", mutate: func(o *Options) { o.AllocateNodeCIDRs = true; o.ClusterCIDR = "10.244.0.0/16"; o.NodeCIDRMaskSize = 8 }, wantErr: "--node-cidr-mask-size"},
		{name: "good cidr", mutate: func(o *Options) { o.AllocateNodeCIDRs = true; o.ClusterCIDR = "10.244.0.0/16" }},
		{name: "bad bind address", mutate: func(o *Options) { o.BindAddress = "10257" }, wantErr: "--bind-address"},
		{name: "zero workers", mutate: func(o *Options) { o.ConcurrentGCSyncs = 0 }, wantErr: "--concurrent-gc-syncs"},
		{name: "zero endpoint workers", mutate: func(o *Options) { o.ConcurrentEndpointSyncs = 0 }, wantErr: "--concurrent-endpoint-syncs"},
		{name: "too many slice workers", mutate: func(o *Options) { o.ConcurrentServiceEndpointSyncs = 51 }, wantErr: "--concurrent-service-endpoint-syncs must not be more than 50"},
		{name: "slices too large", mutate: func(o *Options) { o.MaxEndpointsPerSlice = 1001 }, wantErr: "--max-endpoints-per-slice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.mutate(o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}
