package cni

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

func TestRenderUsesThePodCIDR(t *testing.T) {
	tests := []struct {
		cidr, wantSubnet string
		wantErr          bool
	}{
		{"10.244.1.0/24", "10.244.1.0/24", false},
		{"10.244.1.7/24", "10.244.1.0/24", false},
		{"fd00:10:244::/64", "fd00:10:244::/64", false},
		{"not-a-cidr", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.cidr, func(t *testing.T) {
			data, err := Render(Config{PodCIDR: tc.cidr, DataDir: "/x"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr {
				return
			}
			list, err := libcni.ConfListFromBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, p := range list.Plugins {
				types = append(types, p.Network.Type)
			}
			if !reflect.DeepEqual(types, []string{"bridge", "portmap"}) {
				t.Fatalf("plugins = %v", types)
			}
			var br struct {
				IPAM struct {
					Ranges  [][]map[string]string `json:"ranges"`
					DataDir string                `json:"dataDir"`
				} `json:"ipam"`
			}
			if err := json.Unmarshal(list.Plugins[0].Bytes, &br); err != nil {
				t.Fatal(err)
			}
			if got := br.IPAM.Ranges[0][0]["subnet"]; got != tc.wantSubnet || br.IPAM.DataDir != "/x" {
				t.Fatalf("subnet %q dataDir %q", got, br.IPAM.DataDir)
			}
		})
	}
}

func TestWriteValidatesPluginsAndWritesOnce(t *testing.T) {
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("CNI plugins not installed in /usr/lib/cni (hack/containerd.sh install)")
	}
	dir := t.TempDir()
	path, err := Write(context.Background(), Config{PodCIDR: "10.244.0.0/24"}, "/usr/lib/cni", dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != ConfFileName {
		t.Fatalf("wrote %s", path)
	}
	if _, err := Write(context.Background(), Config{PodCIDR: "10.244.0.0/24"}, t.TempDir(), dir); err == nil {
		t.Fatal("a bin dir without the plugins must fail validation")
	}
}

type fakeTable struct{ routes map[string]string }

func (f *fakeTable) Replace(_ context.Context, r Route) error {
	f.routes[r.Dst] = r.Gateway
	return nil
}
func (f *fakeTable) Delete(_ context.Context, r Route) error { delete(f.routes, r.Dst); return nil }

func TestRoutesFollowOtherNodes(t *testing.T) {
	table := &fakeTable{routes: map[string]string{}}
	r := &Routes{Table: table}
	nodes := []Node{
		{Name: "me", PodCIDR: "10.244.0.0/24", InternalIP: "192.168.0.1"},
		{Name: "n2", PodCIDR: "10.244.1.0/24", InternalIP: "192.168.0.2"},
		{Name: "n3", PodCIDR: "", InternalIP: "192.168.0.3"},
	}
	if err := r.Sync(context.Background(), "me", nodes); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(table.routes, map[string]string{"10.244.1.0/24": "192.168.0.2"}) {
		t.Fatalf("routes = %v", table.routes)
	}
	nodes[2].PodCIDR = "10.244.2.0/24"
	if err := r.Sync(context.Background(), "me", nodes[:1]); err != nil {
		t.Fatal(err)
	}
	if len(table.routes) != 0 {
		t.Fatalf("routes to removed nodes remain: %v", table.routes)
	}
}

func TestRoutesSkipNodesOnThisHost(t *testing.T) {
	table := &fakeTable{routes: map[string]string{}}
	r := &Routes{Table: table}
	nodes := []Node{
		{Name: "me", PodCIDR: "10.244.0.0/24", InternalIP: "192.168.0.1"},
		{Name: "twin", PodCIDR: "10.244.1.0/24", InternalIP: "192.168.0.1"},
		{Name: "other", PodCIDR: "10.244.2.0/24", InternalIP: "192.168.0.2"},
	}
	if err := r.Sync(context.Background(), "me", nodes); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(table.routes, map[string]string{"10.244.2.0/24": "192.168.0.2"}) {
		t.Fatalf("routes = %v, want only the other host's podCIDR", table.routes)
	}
}
