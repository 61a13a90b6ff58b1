package authn

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

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestTokenWebhook(t *testing.T) {
	var calls atomic.Int32
	var gotAudiences atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var tr authnv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		gotAudiences.Store(tr.Spec.Audiences)
		switch tr.Spec.Token {
		case "good":
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "dana", Groups: []string{"sso"}}}
		case "error":
			tr.Status = authnv1.TokenReviewStatus{Error: "token revoked"}
		case "500":
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(&tr)
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
	wh, err := NewTokenWebhook(file, []string{"aud"}, time.Minute, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	steps := []struct {
		name      string
		token     string
		advance   time.Duration
		ok        bool
		wantErr   bool
		wantCalls int32
	}{
		{"accepted", "good", 0, true, false, 1},
		{"remembered", "good", 30 * time.Second, true, false, 1},
		{"forgotten after the TTL", "good", 31 * time.Second, true, false, 2},
		{"unknown token", "nope", 0, false, false, 3},
		{"unknown tokens are not remembered", "nope", 0, false, false, 4},
		{"review error", "error", 0, false, true, 5},
		{"service failing", "500", 0, false, true, 6},
	}
	for _, s := range steps {
		clk.SetTime(clk.Now().Add(s.advance))
		u, ok, err := wh.AuthenticateToken(ctx, s.token)
		if ok != s.ok || (err != nil) != s.wantErr {
			t.Fatalf("%s: ok=%v err=%v", s.name, ok, err)
		}
		if ok && (u.Name != "dana" || len(u.Groups) != 1) {
			t.Fatalf("%s: user %+v", s.name, u)
		}
		if n := calls.Load(); n != s.wantCalls {
			t.Fatalf("%s: %d calls, want %d", s.name, n, s.wantCalls)
		}
	}
	if aud, _ := gotAudiences.Load().([]string); len(aud) != 1 || aud[0] != "aud" {
		t.Fatalf("audiences sent: %v", aud)
	}
}
