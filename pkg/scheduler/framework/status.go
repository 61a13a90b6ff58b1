// Package framework holds the scheduling framework: the extension points that
// plugins implement, the per-node and per-pod information they read, and the
// runtime that runs them in order (and over nodes in parallel).
package framework

import (
	"strings"
)

// Code is the outcome of one plugin call.
type Code int

// The codes follow upstream's meaning so that failure handling reads the same.
const (
	Success Code = iota
	// Error is an internal failure; the pod goes to back-off, not to the
	// unschedulable pool.
	Error
	// Unschedulable: the node does not fit now but a cluster change might help.
	Unschedulable
	// UnschedulableAndUnresolvable: no cluster change to other objects will
	// help this node (e.g. node selector mismatch).
	UnschedulableAndUnresolvable
	// Skip from PreFilter/PreScore: the plugin has nothing to do for this pod,
	// its Filter/Score is not called.
	Skip
)

func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Error:
		return "Error"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	case Skip:
		return "Skip"
	}
	return "Unknown"
}

// Status is a plugin's answer. A nil *Status means Success, so that the hot
// path (a node that fits) allocates nothing.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus builds a status with reasons shown to users.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports a nil or Success status.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports a Skip status.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports Unschedulable or UnschedulableAndUnresolvable.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons returns the user-facing reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Plugin names the plugin that returned the status (set by the runtime).
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that produced the status.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// AsError returns the status as an error (nil on success).
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return statusError{s}
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

type statusError struct{ s *Status }

func (e statusError) Error() string { return e.s.Message() }
