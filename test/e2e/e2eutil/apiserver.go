//go:build e2e

package e2eutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kube-lite/kube-lite/pkg/pki"
)

// APIServer is a kube-lite-apiserver process on loopback that serves with
// the certificate it made itself.
type APIServer struct {
	URL string
	// CAPEM is the self-signed serving certificate, for clients to trust.
	CAPEM   []byte
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
}

// StartAPIServer runs the apiserver binary bin on a free loopback port with
// its certificates and log in dir, plus args (storage, authentication),
// and returns once /readyz answers 200. The error of a server that never
// got ready carries its log.
func StartAPIServer(bin, dir string, args ...string) (*APIServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	s := &APIServer{URL: "https://127.0.0.1:" + strconv.Itoa(port), LogPath: filepath.Join(dir, "apiserver.log"), exited: make(chan struct{})}
	logFile, err := os.Create(s.LogPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, append([]string{"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--cert-dir=" + certDir}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start apiserver: %w", err)
	}
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(s.exited) }()
	certFile := filepath.Join(certDir, pki.SelfSignedCertFile)
	if err := s.waitReady(certFile); err != nil {
		s.Stop()
		log, _ := os.ReadFile(s.LogPath)
		return nil, fmt.Errorf("%w\napiserver log:\n%s", err, log)
	}
	if s.CAPEM, err = os.ReadFile(certFile); err != nil {
		s.Stop()
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	return s, nil
}

// waitReady polls /readyz, trusting the serving certificate once the
// server has written it, until it answers 200 or the server exits.
func (s *APIServer) waitReady(certFile string) error {
	const limit = 2 * time.Minute
	deadline := time.Now().Add(limit)
	err := errors.New("no serving certificate yet")
	for {
		if pem, readErr := os.ReadFile(certFile); readErr == nil {
			if err = readyz(s.URL, pem); err == nil {
				return nil
			}
		}
		select {
		case <-s.exited:
			return errors.New("the apiserver exited before it was ready")
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the apiserver at %s was not ready within %s: %w", s.URL, limit, err)
		}
	}
}

func readyz(url string, caPEM []byte) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(url + "/readyz")
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz %d", resp.StatusCode)
	}
	return nil
}

// Stop ends the server with SIGTERM, and SIGKILL if it does not exit within
// 10 seconds.
func (s *APIServer) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
