package storage

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Sentinel errors; match them with errors.Is. The apiserver maps each to its
// HTTP Status (404, 409, 409, 410, 413, 504).
var (
	ErrKeyNotFound          = errors.New("key not found")
	ErrKeyExists            = errors.New("key exists")
	ErrConflict             = errors.New("object has been modified")
	ErrResourceVersionGone  = errors.New("resource version too old")
	ErrObjectTooLarge       = errors.New("object too large")
	ErrTooLargeResourceVers = errors.New("resource version too large")
	ErrInvalidContinue      = errors.New("invalid continue token")
)

// Error carries the key and a message alongside one of the sentinels.
type Error struct {
	Kind    error
	Key     string
	Message string
	// Continue, on ErrResourceVersionGone for a paged list, resumes the
	// list at the latest revision: clients that accept an inconsistent
	// list may finish it instead of starting over.
	Continue string
}

func (e *Error) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s: %s", e.Key, e.Message)
	}
	return fmt.Sprintf("%s: %v", e.Key, e.Kind)
}

func (e *Error) Unwrap() error { return e.Kind }

// NewError wraps a sentinel with the key and a message.
func NewError(kind error, key, msg string) error { return &Error{Kind: kind, Key: key, Message: msg} }

// NewPreconditionError reports a failed UID or ResourceVersion precondition.
func NewPreconditionError(key, field, want, have string) error {
	return &Error{Kind: ErrConflict, Key: key,
		Message: fmt.Sprintf("Precondition failed: %s in precondition: %s, %s in object meta: %s", field, want, field, have)}
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object has no metadata: %w", err)
	}
	return m, nil
}
