package handler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// storageError maps a storage error to the API error a client expects.
func storageError(err error, gr schema.GroupResource, name string) error {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case errors.As(err, &status):
		return err
	case errors.Is(err, storage.ErrKeyNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		var se *storage.Error
		if errors.As(err, &se) && se.Message != "" {
			return apierrors.NewConflict(gr, name, errors.New(se.Message))
		}
		return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, storage.ErrResourceVersionGone):
		gone := apierrors.NewResourceExpired(storageMessage(err))
		var se *storage.Error
		if errors.As(err, &se) {
			gone.ErrStatus.ListMeta.Continue = se.Continue
		}
		return gone
	case errors.Is(err, storage.ErrInvalidContinue):
		return apierrors.NewBadRequest("invalid continue token: " + storageMessage(err))
	case errors.Is(err, storage.ErrObjectTooLarge):
		return apierrors.NewRequestEntityTooLargeError(storageMessage(err))
	case errors.Is(err, storage.ErrTooLargeResourceVers):
		// client-go recognises this case by the ResourceVersionTooLarge cause,
		// and reflectors then re-list from the latest state.
		tooLarge := apierrors.NewTimeoutError(storageMessage(err), 1)
		tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{
			{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"},
		}
		return tooLarge
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	case errors.Is(err, context.Canceled):
		return apierrors.NewGenericServerResponse(499, "", gr, name, "request cancelled by the client", 0, false)
	}
	return apierrors.NewInternalError(err)
}

// storageMessage is what the client is told of a storage error: its message
// without the storage key, which means nothing to a client.
func storageMessage(err error) string {
	var se *storage.Error
	if errors.As(err, &se) && se.Message != "" {
		return se.Message
	}
	return err.Error()
}

// failure is a Status error with exactly this message. apimachinery's
// NewGenericServerResponse replaces the message with a stock one for most
// codes, and then the user does not learn what was wrong.
func failure(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

// writeError writes err as a Status body with its code.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		slog.Error("internal error", "path", r.URL.Path, "method", r.Method, "err", err)
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
		st.Code = int32(code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Clients (client-go among them) wait as long as Retry-After says
	// before they try again; the body's retryAfterSeconds alone is not
	// read. As upstream, any code carries it, the eviction's 429 of a
	// budget still being processed among them: client-go then retries that
	// one by itself (ten times) before its caller sees the 429.
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	if prettyPrint(r) {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(&st)
}

// WriteError is writeError for other packages of the server (authn, authz, router).
func WriteError(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, err) }

// StorageError is storageError for other packages of the server.
func StorageError(err error, gr schema.GroupResource, name string) error {
	return storageError(err, gr, name)
}
