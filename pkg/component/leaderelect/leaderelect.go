// Package leaderelect runs a component's work under a leader Lease
// (coordination.k8s.io/v1), with upstream's flags.
//
// It is apart from package component because it needs client-go's typed
// clients, whose scheme registers every API group at init: the apiserver,
// which elects no leader, would link and initialise all of them for nothing.
package leaderelect

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Options configures leader election on a coordination.k8s.io Lease.
type Options struct {
	Enabled       bool
	Namespace     string
	Name          string
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// AddFlags registers the upstream flag names.
func (o *Options) AddFlags(fs *pflag.FlagSet, defaultName string) {
	fs.BoolVar(&o.Enabled, "leader-elect", true, "Acquire a leader Lease before doing work, so that replicas can run side by side.")
	fs.StringVar(&o.Namespace, "leader-elect-resource-namespace", "kube-system", "Namespace of the leader Lease.")
	fs.StringVar(&o.Name, "leader-elect-resource-name", defaultName, "Name of the leader Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits before taking over an unrenewed Lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before giving up.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often to try to acquire or renew.")
}

// Validate checks the durations are consistent as client-go requires.
func (o *Options) Validate() error {
	if !o.Enabled {
		return nil
	}
	if o.LeaseDuration <= o.RenewDeadline {
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline)
	}
	if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be greater than --leader-elect-retry-period (%s)", o.RenewDeadline, o.RetryPeriod)
	}
	return nil
}

// Run calls run once this process leads (at once when election is off) and
// returns when ctx ends or leadership is lost; run's ctx is cancelled then.
func (o *Options) Run(ctx context.Context, client kubernetes.Interface, run func(ctx context.Context)) error {
	if !o.Enabled {
		run(ctx)
		return nil
	}
	id := o.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, o.Name,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader lock: %w", err)
	}
	lost := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				slog.Info("became leader", "lease", o.Namespace+"/"+o.Name, "identity", id)
				run(ctx)
			},
			OnStoppedLeading: func() {
				slog.Info("stopped leading", "lease", o.Namespace+"/"+o.Name, "identity", id)
				close(lost)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader elector: %w", err)
	}
	le.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	<-lost
	return fmt.Errorf("lost leadership of %s/%s", o.Namespace, o.Name)
}
