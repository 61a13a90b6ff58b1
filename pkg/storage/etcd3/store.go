// Package etcd3 implements storage.Interface on etcd's v3 API: an object's
// resourceVersion is the etcd revision that last modified its key, writes are
// compare-and-swap transactions on that revision, and watches are etcd
// watches translated into Kubernetes watch events.
package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// DefaultBookmarkInterval is how long a watch that asked for bookmarks may
// stay silent before it gets one.
const DefaultBookmarkInterval = 2 * time.Second

// Option tunes a store.
type Option func(*store)

// WithBookmarkInterval sets how often idle watches that allow bookmarks get
// one (default DefaultBookmarkInterval).
func WithBookmarkInterval(d time.Duration) Option {
	return func(s *store) {
		if d > 0 {
			s.bookmarkInterval = d
		}
	}
}

// SharedBookmarks returns an Option for every store of one client: their
// watches then share one progress request per interval instead of one per
// store. (All watches of a client share one etcd watch stream, and etcd
// answers a progress request on a stream to all of its watches.) It
// overrides WithBookmarkInterval.
func SharedBookmarks(client *clientv3.Client, interval time.Duration) Option {
	if interval <= 0 {
		interval = DefaultBookmarkInterval
	}
	p := newProgressRequester(client, clock.RealClock{}, interval)
	return func(s *store) { s.progress = p }
}

// New returns a storage.Interface keeping objects under prefix in etcd.
// Keys given to its methods are appended to prefix ("/registry" + "/pods/ns/name").
// codec encodes objects for storage and decodes them (NewStorageCodec builds
// the protobuf one upstream uses); newFunc returns an empty object of the
// stored type, for bookmarks and for GuaranteedUpdate with ignoreNotFound.
func New(client *clientv3.Client, codec runtime.Codec, prefix string, newFunc func() runtime.Object, opts ...Option) storage.Interface {
	s := &store{
		client:           client,
		codec:            codec,
		prefix:           strings.TrimSuffix(prefix, "/"),
		newFunc:          newFunc,
		bookmarkInterval: DefaultBookmarkInterval,
	}
	for _, o := range opts {
		o(s)
	}
	if s.progress == nil {
		s.progress = newProgressRequester(client, clock.RealClock{}, s.bookmarkInterval)
	}
	return s
}

type store struct {
	client           *clientv3.Client
	codec            runtime.Codec
	prefix           string
	newFunc          func() runtime.Object
	bookmarkInterval time.Duration
	progress         *progressRequester

	bufPool sync.Pool
}

func (s *store) fullKey(key string) string {
	if strings.HasPrefix(key, "/") {
		return s.prefix + key
	}
	return s.prefix + "/" + key
}

// dirKey is the prefix of everything under key: the trailing slash keeps
// "/pods/ns" from matching "/pods/ns2/x".
func (s *store) dirKey(key string) string {
	k := s.fullKey(key)
	if !strings.HasSuffix(k, "/") {
		k += "/"
	}
	return k
}

// encode prepares obj for storage (no resourceVersion in the stored bytes)
// and encodes it.
func (s *store) encode(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("etcd3: object has no metadata: %w", err)
	}
	m.SetResourceVersion("")
	buf, _ := s.bufPool.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	defer s.bufPool.Put(buf)
	if err := s.codec.Encode(obj, buf); err != nil {
		return nil, fmt.Errorf("etcd3: encode: %w", err)
	}
	return bytes.Clone(buf.Bytes()), nil
}

// decode fills into from stored bytes and stamps it with rev.
func (s *store) decode(data []byte, into runtime.Object, rev int64) error {
	if _, _, err := s.codec.Decode(data, nil, into); err != nil {
		return fmt.Errorf("etcd3: decode: %w", err)
	}
	return setResourceVersion(into, rev)
}

// decodeNew decodes stored bytes into a new object of the resource,
// stamped with rev.
func (s *store) decodeNew(data []byte, rev int64) (runtime.Object, error) {
	obj := s.newFunc()
	if err := s.decode(data, obj, rev); err != nil {
		return nil, err
	}
	return obj, nil
}

// NewDecoder returns how a store made with codec and newFunc decodes a
// value it holds at revision rev: what the consumer of a watch with
// storage.ListOptions.Encoded needs.
func NewDecoder(codec runtime.Codec, newFunc func() runtime.Object) func(data []byte, rev int64) (runtime.Object, error) {
	return (&store{codec: codec, newFunc: newFunc}).decodeNew
}

func setResourceVersion(obj runtime.Object, rev int64) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("etcd3: object has no metadata: %w", err)
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// Create implements storage.Interface. It is one transaction: put if the key
// has never been created (or was deleted). Passing the same object as obj and
// out is allowed and saves decoding what was just encoded.
func (s *store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	data, err := s.encode(obj)
	if err != nil {
		return err
	}
	k := s.fullKey(key)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(data))).
		Commit()
	if err != nil {
		return s.etcdError(k, "create", err)
	}
	if !resp.Succeeded {
		return storage.NewError(storage.ErrKeyExists, key, "already exists")
	}
	return s.fill(out, obj, data, resp.Header.Revision)
}

// fill makes out the stored object at rev. When out is the object that was
// just encoded, it already holds what was stored: only the resourceVersion
// changes, saving a decode on the hot write path.
func (s *store) fill(out, written runtime.Object, data []byte, rev int64) error {
	if out == nil {
		return nil
	}
	if out == written {
		return setResourceVersion(out, rev)
	}
	return s.decode(data, out, rev)
}

// Get implements storage.Interface.
func (s *store) Get(ctx context.Context, key string, out runtime.Object) error {
	k := s.fullKey(key)
	resp, err := s.client.Get(ctx, k)
	if err != nil {
		return s.etcdError(k, "get", err)
	}
	if len(resp.Kvs) == 0 {
		return storage.NewError(storage.ErrKeyNotFound, key, "not found")
	}
	kv := resp.Kvs[0]
	return s.decode(kv.Value, out, kv.ModRevision)
}

// CurrentRevision implements storage.Interface.
func (s *store) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, s.etcdError(compactRevKey, "get revision", err)
	}
	return resp.Header.Revision, nil
}

// current is what a key held when last read: data is nil when absent.
type current struct {
	data []byte
	rev  int64 // ModRevision; 0 when absent
	// fresh says the read was linearizable. Writes start from a cheaper
	// serializable read: their transaction compares the revision, so a
	// stale read costs a retry, never a lost update. Any answer that is not
	// a successful write (not found, a failed precondition, "no change") is
	// only given from a fresh read.
	fresh bool
}

func (s *store) readCurrent(ctx context.Context, k string, fresh bool) (current, error) {
	var opts []clientv3.OpOption
	if !fresh {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := s.client.Get(ctx, k, opts...)
	if err != nil {
		return current{}, s.etcdError(k, "get", err)
	}
	c := currentFromKvs(resp.Kvs)
	c.fresh = fresh
	return c, nil
}

func currentFromKvs(kvs []*mvccpb.KeyValue) current {
	if len(kvs) == 0 {
		return current{}
	}
	return current{data: kvs[0].Value, rev: kvs[0].ModRevision}
}

// currentFromElse reads the state that a failed transaction's Else Get
// returned, saving a round trip on conflict. A transaction is linearizable.
func currentFromElse(resp *clientv3.TxnResponse) current {
	c := current{fresh: true}
	if len(resp.Responses) > 0 {
		c = currentFromKvs(resp.Responses[0].GetResponseRange().GetKvs())
		c.fresh = true
	}
	return c
}

// GuaranteedUpdate implements storage.Interface.
func (s *store) GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	k := s.fullKey(key)
	cur, err := s.readCurrent(ctx, k, false)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("etcd3: update %s: %w", key, err)
		}
		data, err := s.tryUpdate(key, cur, out, ignoreNotFound, preconditions, tryUpdate)
		if data == nil {
			if !cur.fresh {
				// The answer must not come from a stale read.
				if cur, err = s.readCurrent(ctx, k, true); err != nil {
					return err
				}
				continue
			}
			return err
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.rev)).
			Then(clientv3.OpPut(k, string(data))).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return s.etcdError(k, "update", err)
		}
		if !resp.Succeeded {
			cur = currentFromElse(resp)
			continue
		}
		return s.decode(data, out, resp.Header.Revision)
	}
}

// tryUpdate computes what GuaranteedUpdate writes over cur. No data means
// there is nothing to write: err is the answer to give, or nil when out
// already holds the unchanged object.
func (s *store) tryUpdate(key string, cur current, out runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) ([]byte, error) {
	obj := s.newFunc()
	if cur.data == nil {
		if !ignoreNotFound {
			return nil, storage.NewError(storage.ErrKeyNotFound, key, "not found")
		}
	} else if err := s.decode(cur.data, obj, cur.rev); err != nil {
		return nil, err
	}
	if err := preconditions.Check(key, obj); err != nil {
		return nil, err
	}
	updated, err := tryUpdate(obj)
	if err != nil {
		return nil, err
	}
	if updated == nil {
		if cur.data == nil {
			return nil, storage.NewError(storage.ErrKeyNotFound, key, "not found")
		}
		return nil, s.decode(cur.data, out, cur.rev)
	}
	data, err := s.encode(updated)
	if err != nil {
		return nil, err
	}
	if cur.data != nil && bytes.Equal(data, cur.data) {
		// Nothing changed: no write, no new resourceVersion, no watch event.
		return nil, s.decode(cur.data, out, cur.rev)
	}
	return data, nil
}

// Delete implements storage.Interface. out gets the object as it was last
// stored, with the resourceVersion of the deletion: the same object and
// revision that the DELETED watch event carries.
func (s *store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validate storage.ValidateDeletionFunc) error {
	k := s.fullKey(key)
	cur, err := s.readCurrent(ctx, k, false)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("etcd3: delete %s: %w", key, err)
		}
		if err := s.checkDelete(ctx, key, cur, preconditions, validate); err != nil {
			if !cur.fresh {
				if cur, err = s.readCurrent(ctx, k, true); err != nil {
					return err
				}
				continue
			}
			return err
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.rev)).
			Then(clientv3.OpDelete(k)).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return s.etcdError(k, "delete", err)
		}
		if !resp.Succeeded {
			cur = currentFromElse(resp)
			continue
		}
		return s.decode(cur.data, out, resp.Header.Revision)
	}
}

// checkDelete says whether cur may be deleted.
func (s *store) checkDelete(ctx context.Context, key string, cur current, preconditions *storage.Preconditions,
	validate storage.ValidateDeletionFunc) error {
	if cur.data == nil {
		return storage.NewError(storage.ErrKeyNotFound, key, "not found")
	}
	obj, err := s.decodeNew(cur.data, cur.rev)
	if err != nil {
		return err
	}
	if err := preconditions.Check(key, obj); err != nil {
		return err
	}
	if validate != nil {
		return validate(ctx, obj)
	}
	return nil
}

// etcdError turns etcd's failures into storage errors where the apiserver
// has a status for them, and wraps the rest.
func (s *store) etcdError(key, op string, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrRequestTooLarge), status.Code(err) == codes.ResourceExhausted:
		return storage.NewError(storage.ErrObjectTooLarge, strings.TrimPrefix(key, s.prefix), "object too large to store")
	case errors.Is(err, rpctypes.ErrCompacted):
		return storage.NewError(storage.ErrResourceVersionGone, strings.TrimPrefix(key, s.prefix), err.Error())
	}
	return fmt.Errorf("etcd3: %s %s: %w", op, key, err)
}

func isCompactedErr(err error) bool { return errors.Is(err, rpctypes.ErrCompacted) }
