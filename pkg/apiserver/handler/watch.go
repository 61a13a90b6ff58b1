package handler

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// Watches without timeoutSeconds end after a random 30 to 60 minutes, as
// upstream's, so that clients re-list now and then and load spreads.
const minWatchTimeout = 30 * time.Minute

// serveWatch streams watch events as newline-delimited JSON WatchEvents.
func (h *Handler) serveWatch(w http.ResponseWriter, r *http.Request, st *Store, key string, recursive bool, p listParams) {
	mc, err := negotiated(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if mc.yaml {
		// YAML has no stream form: upstream refuses it for a watch.
		writeError(w, r, failure(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			"only the following media types are accepted: application/json;stream=watch, "+protobufType+";stream=watch"))
		return
	}
	timeout := time.Duration(p.timeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = minWatchTimeout + rand.N(minWatchTimeout)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()

	opts := p.opts
	opts.Recursive = recursive
	if p.noInitialEvents && (opts.ResourceVersion == "" || opts.ResourceVersion == "0") {
		// sendInitialEvents=false: only what changes from now on.
		rev, err := st.Storage.CurrentRevision(r.Context())
		if err != nil {
			writeError(w, r, storageError(err, st.groupResource(), ""))
			return
		}
		opts.ResourceVersion = strconv.FormatInt(rev, 10)
	}
	if p.sendInitialEvents {
		// The storage reads the current state, sends it as ADDED events and
		// marks its end with a bookmark, then watches from that revision:
		// one consistent stream, as sendInitialEvents clients expect.
		opts.ResourceVersion = ""
		opts.InitialEventsEndBookmark = true
	}
	wi, watchErr := st.Storage.Watch(ctx, key, opts)
	if watchErr == nil {
		defer wi.Stop()
	}

	flusher, _ := w.(http.Flusher)
	if mc.proto {
		w.Header().Set("Content-Type", protobufType+";stream=watch")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	var buf bytes.Buffer
	_, shared := wi.(storage.SharedWatch)
	send := func(typ watch.EventType, obj runtime.Object) bool {
		frame, err := h.watchFrame(&buf, r, st, mc, shared, typ, obj)
		if err != nil {
			return false
		}
		_, err = w.Write(frame)
		return err == nil
	}

	if watchErr != nil {
		// Like upstream, a watch that cannot start (410 for a compacted
		// resourceVersion) reports it as an ERROR event in the stream.
		var status apierrors.APIStatus
		if errors.As(storageError(watchErr, st.groupResource(), ""), &status) {
			s := status.Status()
			send(watch.Error, &s)
		}
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			if !send(ev.Type, ev.Object) {
				return
			}
			// Drain what is already queued before flushing, so bursts go out in
			// one write instead of one syscall per event.
			for more := true; more; {
				select {
				case ev, ok := <-wi.ResultChan():
					if !ok {
						if flusher != nil {
							flusher.Flush()
						}
						return
					}
					if !send(ev.Type, ev.Object) {
						return
					}
				default:
					more = false
				}
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// watchFrame returns the bytes of one watch event, encoded into buf or, for
// an object of a shared watch (storage.SharedWatch) another watch has just
// sent the same way, from h.frames; objects of other watches are sent once
// and would only fill the frames. Only whole objects are shared: Tables and
// metadata depend on the request.
func (h *Handler) watchFrame(buf *bytes.Buffer, r *http.Request, st *Store, mc mediaChoice, shared bool, typ watch.EventType, obj runtime.Object) ([]byte, error) {
	shared = shared && typ != watch.Error && (mc.proto || mc.kind == outputObject || typ == watch.Bookmark)
	k := frameKey{obj: obj, typ: typ, proto: mc.proto}
	if shared {
		if frame, ok := h.frames.get(k); ok {
			return frame, nil
		}
	}
	buf.Reset()
	if err := h.encodeEvent(buf, r, st, mc, typ, obj); err != nil {
		return nil, err
	}
	if shared {
		h.frames.put(k, buf.Bytes())
	}
	return buf.Bytes(), nil
}

func (h *Handler) encodeEvent(buf *bytes.Buffer, r *http.Request, st *Store, mc mediaChoice, typ watch.EventType, obj runtime.Object) error {
	if mc.proto {
		return h.encodeProtoEvent(buf, st, typ, obj)
	}
	buf.WriteString(`{"type":"`)
	buf.WriteString(string(typ))
	buf.WriteString(`","object":`)
	var out runtime.Object = obj
	if status, ok := obj.(*metav1.Status); ok {
		status.Kind, status.APIVersion = "Status", "v1"
	} else if typ != watch.Bookmark && mc.kind != outputObject {
		var err error
		if out, err = h.transform(r, st, mc, obj); err != nil {
			return err
		}
	} else {
		setKind(obj, st.GroupVersionKind())
	}
	start := buf.Len()
	if err := h.json.Encode(out, buf); err != nil {
		return err
	}
	if buf.Len() > start && buf.Bytes()[buf.Len()-1] == '\n' {
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString("}\n")
	return nil
}

// encodeProtoEvent writes one length-prefixed protobuf WatchEvent frame, the
// object inside it in the full protobuf envelope, as client-go expects.
func (h *Handler) encodeProtoEvent(buf *bytes.Buffer, st *Store, typ watch.EventType, obj runtime.Object) error {
	if status, ok := obj.(*metav1.Status); ok {
		status.Kind, status.APIVersion = "Status", "v1"
	} else {
		setKind(obj, st.GroupVersionKind())
	}
	var inner bytes.Buffer
	if err := h.proto.Encode(obj, &inner); err != nil {
		return err
	}
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: inner.Bytes()}}
	data, err := ev.Marshal()
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	buf.Write(n[:])
	buf.Write(data)
	return nil
}
