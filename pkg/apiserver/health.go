package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// health serves /livez (the process answers) and /readyz (etcd answers
// too); ?verbose lists each check as upstream does.
func (s *Server) health(checkEtcd bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		type check struct {
			name string
			err  error
		}
		checks := []check{{name: "ping"}}
		if checkEtcd {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			_, err := s.etcd.Get(ctx, "health", clientv3.WithCountOnly())
			cancel()
			checks = append(checks, check{name: "etcd", err: err})
		}
		var b strings.Builder
		failed := false
		for _, c := range checks {
			if c.err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, c.err)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		name := strings.Trim(strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0], "/")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", b.String(), name)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "%s%s check passed\n", b.String(), name)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}
}
