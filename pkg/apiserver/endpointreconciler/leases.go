package endpointreconciler

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeasePrefix is where the leases live under the etcd prefix, as upstream's
// /registry/masterleases/<ip>.
const LeasePrefix = "/masterleases/"

// EtcdLeases keeps each apiserver's lease as a key bound to an etcd lease
// of TTL: etcd removes it when the apiserver stops renewing it.
type EtcdLeases struct {
	Client *clientv3.Client
	// Prefix is the etcd prefix with LeasePrefix appended.
	Prefix string
	last   clientv3.LeaseID
}

// Renew implements Leases: a fresh etcd lease takes over the key, and the
// previous one (holding nothing now) is revoked.
func (l *EtcdLeases) Renew(ctx context.Context, ip string) error {
	g, err := l.Client.Grant(ctx, int64(TTL.Seconds()))
	if err != nil {
		return fmt.Errorf("grant the apiserver lease: %w", err)
	}
	if _, err := l.Client.Put(ctx, l.Prefix+ip, ip, clientv3.WithLease(g.ID)); err != nil {
		return fmt.Errorf("renew the apiserver lease of %s: %w", ip, err)
	}
	if l.last != 0 {
		_, _ = l.Client.Revoke(ctx, l.last) // expires by itself otherwise
	}
	l.last = g.ID
	return nil
}

// List implements Leases.
func (l *EtcdLeases) List(ctx context.Context) ([]string, error) {
	resp, err := l.Client.Get(ctx, l.Prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list apiserver leases: %w", err)
	}
	ips := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		ips = append(ips, strings.TrimPrefix(string(kv.Key), l.Prefix))
	}
	return ips, nil
}

// Remove implements Leases.
func (l *EtcdLeases) Remove(ctx context.Context, ip string) error {
	if _, err := l.Client.Delete(ctx, l.Prefix+ip); err != nil {
		return fmt.Errorf("remove the apiserver lease of %s: %w", ip, err)
	}
	if l.last != 0 {
		_, _ = l.Client.Revoke(ctx, l.last)
		l.last = 0
	}
	return nil
}
