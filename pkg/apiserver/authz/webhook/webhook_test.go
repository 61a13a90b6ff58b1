package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

func TestWebhook(t *testing.T) {
	var calls atomic.Int32
	var last atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var sar authzv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		last.Store(sar.Spec)
		switch sar.Spec.User {
		case "yes":
			sar.Status.Allowed = true
		case "no":
			sar.Status = authzv1.SubjectAccessReviewStatus{Denied: true, Reason: "nope"}
		case "down":
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	defer srv.Close()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	file := filepath.Join(t.TempDir(), "kc")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	z, err := New(file, time.Minute, clk)
	if err != nil {
		t.Fatal(err)
	}
	attrs := func(user string) authz.Attributes {
		return authz.Attributes{User: &request.User{Name: user, Groups: []string{"g"}}, ResourceRequest: true,
			Verb: "get", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "d"}
	}
	steps := []struct {
		name      string
		user      string
		advance   time.Duration
		want      authz.Decision
		wantErr   bool
		wantCalls int32
	}{
		{"allowed", "yes", 0, authz.Allow, false, 1},
		{"allowed is remembered", "yes", 59 * time.Second, authz.Allow, false, 1},
		{"until the TTL", "yes", 2 * time.Second, authz.Allow, false, 2},
		{"denied", "no", 0, authz.Deny, false, 3},
		{"denied is remembered half as long", "no", 29 * time.Second, authz.Deny, false, 3},
		{"denied forgotten", "no", 2 * time.Second, authz.Deny, false, 4},
		{"no opinion", "maybe", 0, authz.NoOpinion, false, 5},
		{"service down: no decision", "down", 0, authz.NoOpinion, true, 6},
	}
	for _, s := range steps {
		clk.SetTime(clk.Now().Add(s.advance))
		d, _, err := z.Authorize(context.Background(), attrs(s.user))
		if d != s.want || (err != nil) != s.wantErr {
			t.Fatalf("%s: %s %v", s.name, d, err)
		}
		if n := calls.Load(); n != s.wantCalls {
			t.Fatalf("%s: %d calls, want %d", s.name, n, s.wantCalls)
		}
	}
	spec := last.Load().(authzv1.SubjectAccessReviewSpec)
	ra := spec.ResourceAttributes
	if ra == nil || ra.Group != "apps" || ra.Resource != "deployments" || ra.Subresource != "scale" || ra.Namespace != "ns" || ra.Name != "d" || ra.Verb != "get" || len(spec.Groups) != 1 {
		t.Fatalf("review sent: %+v %+v", spec, ra)
	}
}
