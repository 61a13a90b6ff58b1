package etcd3

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// maxListBatch bounds how many keys one range request fetches while a
// filtered list looks for enough matches to fill its limit.
const maxListBatch = 10000

// continueToken is the (base64 JSON) continue parameter: the revision the
// first page was read at and the key, relative to the listed prefix, to
// resume from.
type continueToken struct {
	V     int    `json:"v"`
	RV    int64  `json:"rv"`
	Start string `json:"start"`
}

func encodeContinue(rv int64, start string) (string, error) {
	b, err := json.Marshal(continueToken{V: 1, RV: rv, Start: start})
	if err != nil {
		return "", fmt.Errorf("etcd3: encode continue token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeContinue(token string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", storage.NewError(storage.ErrInvalidContinue, "", "continue key is not valid: "+err.Error())
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return 0, "", storage.NewError(storage.ErrInvalidContinue, "", "continue key is not valid: "+err.Error())
	}
	// RV -1 is the token a compacted list hands out: resume at the latest
	// revision.
	if t.V != 1 || (t.RV <= 0 && t.RV != latestRV) || t.Start == "" {
		return 0, "", storage.NewError(storage.ErrInvalidContinue, "", "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	return t.RV, t.Start, nil
}

// latestRV in a continue token resumes the list at the latest revision.
const latestRV = -1

// Messages of the 410s a list gets when etcd has compacted the revision it
// asks for, worded as upstream's so that clients and people recognise them.
const (
	listExpired = "The resourceVersion for the provided list is too old."
	// continueExpired comes with a token that resumes at the latest revision.
	continueExpired = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response " +
		"to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent " +
		"list - objects that were created, modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// parseRV reads a client's resourceVersion. A malformed one is the client's
// mistake: the error is a 400 Status, which the apiserver passes through.
func parseRV(rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// continueGone is the 410 of a continue token whose revision is compacted,
// with a token resuming from the same key at the latest revision.
func continueGone(prefix, rel string) error {
	token, err := encodeContinue(latestRV, rel)
	if err != nil {
		return err
	}
	return &storage.Error{Kind: storage.ErrResourceVersionGone, Key: prefix, Message: continueExpired, Continue: token}
}

// List implements storage.Interface. Every page of a paged list is read at
// the revision of the first one, so a client walking the continue tokens sees
// one consistent snapshot.
func (s *store) List(ctx context.Context, prefix string, opts storage.ListOptions, listOut runtime.Object) error {
	itemsPtr, err := meta.GetItemsPtr(listOut)
	if err != nil {
		return fmt.Errorf("etcd3: list: %w", err)
	}
	items, err := conversion.EnforcePtr(itemsPtr)
	if err != nil || items.Kind() != reflect.Slice {
		return fmt.Errorf("etcd3: list: items of %T are not a slice", listOut)
	}
	elemType := items.Type().Elem()
	elemIsPtr := elemType.Kind() == reflect.Pointer
	newItem := func() (runtime.Object, reflect.Value) {
		if elemIsPtr {
			v := reflect.New(elemType.Elem())
			return v.Interface().(runtime.Object), v
		}
		v := reflect.New(elemType)
		return v.Interface().(runtime.Object), v.Elem()
	}

	dir := s.dirKey(prefix)
	start, end := dir, clientv3.GetPrefixRangeEnd(dir)

	var readRev, minRev int64
	var contStart string // where the client's continue token resumes
	serializable := false
	switch {
	case opts.Continue != "":
		rv, rel, err := decodeContinue(opts.Continue)
		if err != nil {
			return err
		}
		start, contStart = dir+rel, rel
		if rv != latestRV {
			readRev = rv
		}
	case opts.ResourceVersion == "":
	case opts.ResourceVersion == "0":
		// "Any state" is allowed to be stale; a serializable read skips the
		// leader round trip.
		serializable = true
	default:
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			return err
		}
		if opts.Exact {
			readRev = rv
		} else {
			minRev = rv
		}
	}

	filter := !opts.Predicate.Empty()
	if filter && opts.Predicate.GetAttrs == nil {
		return errors.New("etcd3: list: a selector needs GetAttrs")
	}
	limit := opts.Limit
	if limit < 0 {
		limit = 0
	}
	batch := limit
	if filter && batch > 0 && batch < 100 {
		batch = 100
	}

	var (
		count     int64
		hasMore   bool
		lastKey   []byte
		remaining int64 = -1
	)
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if readRev > 0 {
			ops = append(ops, clientv3.WithRev(readRev))
		}
		if batch > 0 {
			ops = append(ops, clientv3.WithLimit(batch))
		}
		if serializable {
			ops = append(ops, clientv3.WithSerializable())
		}
		resp, err := s.client.Get(ctx, start, ops...)
		if err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				if opts.Continue != "" {
					return continueGone(prefix, contStart)
				}
				return storage.NewError(storage.ErrResourceVersionGone, prefix, listExpired)
			}
			if errors.Is(err, rpctypes.ErrFutureRev) {
				return storage.NewError(storage.ErrTooLargeResourceVers, prefix,
					fmt.Sprintf("Too large resource version: %d", readRev))
			}
			return s.etcdError(start, "list", err)
		}
		if readRev == 0 {
			readRev = resp.Header.Revision
			if minRev > readRev {
				return storage.NewError(storage.ErrTooLargeResourceVers, prefix,
					fmt.Sprintf("Too large resource version: %d, current: %d", minRev, readRev))
			}
		}
		if items.Cap()-items.Len() < len(resp.Kvs) && !filter {
			grown := reflect.MakeSlice(items.Type(), items.Len(), items.Len()+len(resp.Kvs))
			reflect.Copy(grown, items)
			items.Set(grown)
		}
		for _, kv := range resp.Kvs {
			if limit > 0 && count == limit {
				hasMore = true
				break
			}
			lastKey = kv.Key
			obj, val := newItem()
			if err := s.decode(kv.Value, obj, kv.ModRevision); err != nil {
				return fmt.Errorf("%w (key %s)", err, kv.Key)
			}
			if filter {
				ok, err := opts.Predicate.Matches(obj)
				if err != nil {
					return fmt.Errorf("etcd3: list: match %s: %w", kv.Key, err)
				}
				if !ok {
					continue
				}
			}
			items.Set(reflect.Append(items, val))
			count++
		}
		if hasMore || !resp.More {
			break
		}
		if limit > 0 && count == limit {
			// Full, and etcd has more keys: they may or may not match.
			hasMore = true
			if !filter {
				remaining = resp.Count - int64(len(resp.Kvs))
			}
			break
		}
		start = string(lastKey) + "\x00"
		if filter && batch > 0 {
			batch = min(batch*2, maxListBatch)
		}
	}

	lm, err := meta.ListAccessor(listOut)
	if err != nil {
		return fmt.Errorf("etcd3: list: %w", err)
	}
	if items.IsNil() {
		// An empty list says "items": [], as upstream's: clients iterate
		// over it without a null check.
		items.Set(reflect.MakeSlice(items.Type(), 0, 0))
	}
	lm.SetResourceVersion(strconv.FormatInt(readRev, 10))
	lm.SetContinue("")
	lm.SetRemainingItemCount(nil)
	if hasMore {
		next := strings.TrimPrefix(string(lastKey), dir) + "\x00"
		token, err := encodeContinue(readRev, next)
		if err != nil {
			return err
		}
		lm.SetContinue(token)
		if remaining >= 0 {
			lm.SetRemainingItemCount(&remaining)
		}
	}
	return nil
}
