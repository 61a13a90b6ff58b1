package servicealloc

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdStore keeps claims in etcd, each key created only when absent.
type EtcdStore struct {
	kv clientv3.KV
}

// NewEtcdStore keeps claims through kv.
func NewEtcdStore(kv clientv3.KV) *EtcdStore { return &EtcdStore{kv: kv} }

// Create implements Store.
func (s *EtcdStore) Create(ctx context.Context, key string, value []byte) (bool, error) {
	resp, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).Commit()
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return resp.Succeeded, nil
}

// Get implements Store.
func (s *EtcdStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	resp, err := s.kv.Get(ctx, key)
	if err != nil {
		return nil, false, fmt.Errorf("read claim %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, false, nil
	}
	return resp.Kvs[0].Value, true, nil
}

// List implements Store.
func (s *EtcdStore) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	resp, err := s.kv.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list claims under %s: %w", prefix, err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = kv.Value
	}
	return out, nil
}

// DeleteIf implements Store.
func (s *EtcdStore) DeleteIf(ctx context.Context, key string, value []byte) error {
	_, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", string(value))).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("free %s: %w", key, err)
	}
	return nil
}
