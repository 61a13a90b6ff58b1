package endpoints

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func newEndpoints() *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.0.5"}},
			Ports:     []corev1.EndpointPort{{Port: 8080}},
		}},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(e *corev1.Endpoints)
		want   []string
	}{
		{"valid", func(*corev1.Endpoints) {}, nil},
		{"no subsets", func(e *corev1.Endpoints) { e.Subsets = nil }, nil},
		{"no addresses", func(e *corev1.Endpoints) { e.Subsets[0].Addresses = nil },
			[]string{"subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"}},
		{"not an IP", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "web" },
			[]string{`subsets[0].addresses[0].ip: Invalid value: "web": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}},
		{"loopback", func(e *corev1.Endpoints) {
			e.Subsets[0].NotReadyAddresses = []corev1.EndpointAddress{{IP: "127.0.0.1"}}
		},
			[]string{`subsets[0].notReadyAddresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`}},
		{"link-local", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "169.254.1.1" },
			[]string{`subsets[0].addresses[0].ip: Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)`}},
		{"two ports, one unnamed", func(e *corev1.Endpoints) {
			e.Subsets[0].Ports = []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: "TCP"}, {Port: 443, Protocol: "TCP"}}
		}, []string{"subsets[0].ports[1].name: Required value"}},
		{"port 0", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Port = 0 },
			[]string{"subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{"bad protocol", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Protocol = "HTTP" },
			[]string{`subsets[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEndpoints()
			tt.mutate(e)
			r := Resource(clocktesting.NewFakePassiveClock(now))
			r.Strategy.Default(e)
			errs := r.Strategy.Validate(context.Background(), e)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestTable(t *testing.T) {
	many := newEndpoints()
	many.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "10.244.0.5"}, {IP: "10.244.0.6"}, {IP: "10.244.1.5"}, {IP: "10.244.1.6"}, {IP: "10.244.2.5"}}
	headless := newEndpoints()
	headless.Subsets[0].Ports = nil
	notReady := newEndpoints()
	notReady.Subsets[0].NotReadyAddresses, notReady.Subsets[0].Addresses = notReady.Subsets[0].Addresses, nil
	tests := []struct {
		name string
		e    *corev1.Endpoints
		want string
	}{
		{"one", newEndpoints(), "10.244.0.5:8080"},
		{"more than three", many, "10.244.0.5:8080,10.244.0.6:8080,10.244.1.5:8080 + 2 more..."},
		{"no ports", headless, "10.244.0.5"},
		{"none", &corev1.Endpoints{}, "<none>"},
		{"only not ready", notReady, ""},
	}
	tbl := Resource(clocktesting.NewFakePassiveClock(now)).Table
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, err := tbl.Cells(tt.e)
			if err != nil || cells[1] != tt.want {
				t.Errorf("ENDPOINTS = %q (%v), want %q", cells[1], err, tt.want)
			}
		})
	}
	cells, _ := tbl.Cells(newEndpoints())
	if cells[0] != "web" || cells[2] != "60s" {
		t.Errorf("row = %v", cells)
	}
}
