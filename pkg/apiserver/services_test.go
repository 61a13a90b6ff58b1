package apiserver

import (
	"strings"
	"testing"
)

func TestDefaultRouteInterface(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	tests := []struct {
		name, table, want string
	}{
		{"default route second", header +
			"cni0\t0000F40A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n" +
			"eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n", "eth0"},
		{"no default route", header + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultRouteInterface(tt.table); got != tt.want {
				t.Errorf("defaultRouteInterface = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestServiceOptions(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *Options)
		want   string
	}{
		{"defaults", func(*Options) {}, ""},
		{"IPv6 range", func(o *Options) { o.ServiceClusterIPRange = "fd00::/108" }, "--service-cluster-ip-range"},
		{"not a CIDR", func(o *Options) { o.ServiceClusterIPRange = "10.96.0.0" }, "--service-cluster-ip-range"},
		{"bad port range", func(o *Options) { o.ServiceNodePortRange = "32767-30000" }, "--service-node-port-range"},
		{"bad advertise address", func(o *Options) { o.AdvertiseAddress = "host" }, "--advertise-address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.mutate(o)
			err := o.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.want)
			}
		})
	}
	o := NewOptions()
	o.BindAddress = "192.0.2.10"
	if got := o.advertiseAddress(); got != "192.0.2.10" {
		t.Errorf("advertise address with --bind-address 192.0.2.10 = %q", got)
	}
	o.AdvertiseAddress = "192.0.2.20"
	if got := o.advertiseAddress(); got != "192.0.2.20" {
		t.Errorf("advertise address with --advertise-address 192.0.2.20 = %q", got)
	}
}
