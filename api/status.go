package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Status is the body of every API error and of some successful deletes,
// exactly as Kubernetes' metav1.Status.
type Status struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata"`
	Status   string         `json:"status,omitempty"` // Success or Failure
	Message  string         `json:"message,omitempty"`
	Reason   StatusReason   `json:"reason,omitempty"`
	Details  *StatusDetails `json:"details,omitempty"`
	Code     int32          `json:"code,omitempty"`
}

// StatusReason is a machine-readable reason for a failure.
type StatusReason string

// Status reasons used by skiff.
const (
	StatusReasonInvalid               StatusReason = "Invalid"
	StatusReasonAlreadyExists         StatusReason = "AlreadyExists"
	StatusReasonConflict              StatusReason = "Conflict"
	StatusReasonNotFound              StatusReason = "NotFound"
	StatusReasonBadRequest            StatusReason = "BadRequest"
	StatusReasonUnauthorized          StatusReason = "Unauthorized"
	StatusReasonForbidden             StatusReason = "Forbidden"
	StatusReasonRequestEntityTooLarge StatusReason = "RequestEntityTooLarge"
	StatusReasonGone                  StatusReason = "Gone"
	StatusReasonExpired               StatusReason = "Expired"
	StatusReasonMethodNotAllowed      StatusReason = "MethodNotAllowed"
	StatusReasonNotAcceptable         StatusReason = "NotAcceptable"
	StatusReasonUnsupportedMediaType  StatusReason = "UnsupportedMediaType"
	StatusReasonTooManyRequests       StatusReason = "TooManyRequests"
	StatusReasonInternalError         StatusReason = "InternalError"
	StatusReasonServiceUnavailable    StatusReason = "ServiceUnavailable"
	StatusReasonTimeout               StatusReason = "Timeout"
	// StatusReasonInsufficientStorage (507) means the server's disk is
	// full; deletes still work.
	StatusReasonInsufficientStorage StatusReason = "InsufficientStorage"
)

// StatusDetails names the object a Status is about and, for Invalid, each
// field at fault.
type StatusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	UID               string        `json:"uid,omitempty"`
	Causes            []StatusCause `json:"causes,omitempty"`
	RetryAfterSeconds int32         `json:"retryAfterSeconds,omitempty"`
}

// StatusCause is one reason for a failure, usually one field.
type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// StatusError is an error carrying a Status; API handlers answer with its
// Status and HTTP code, clients return it for non-2xx answers.
type StatusError struct {
	Status Status
}

// Error implements error.
func (e *StatusError) Error() string { return e.Status.Message }

// NewStatusError builds a failure Status with the given code and reason.
func NewStatusError(code int, reason StatusReason, format string, args ...any) *StatusError {
	return &StatusError{Status: Status{
		TypeMeta: TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   "Failure",
		Message:  fmt.Sprintf(format, args...),
		Reason:   reason,
		Code:     int32(code),
	}}
}

// NewNotFound reports that resource/name does not exist.
func NewNotFound(resource, name string) *StatusError {
	e := NewStatusError(http.StatusNotFound, StatusReasonNotFound, "%s %q not found", resource, name)
	e.Status.Details = &StatusDetails{Name: name, Kind: resource}
	return e
}

// NewAlreadyExists reports that resource/name exists already.
func NewAlreadyExists(resource, name string) *StatusError {
	e := NewStatusError(http.StatusConflict, StatusReasonAlreadyExists, "%s %q already exists", resource, name)
	e.Status.Details = &StatusDetails{Name: name, Kind: resource}
	return e
}

// NewConflict reports a failed precondition (stale resourceVersion).
func NewConflict(resource, name, why string) *StatusError {
	e := NewStatusError(http.StatusConflict, StatusReasonConflict,
		"Operation cannot be fulfilled on %s %q: %s", resource, name, why)
	e.Status.Details = &StatusDetails{Name: name, Kind: resource}
	return e
}

// NewBadRequest reports malformed input.
func NewBadRequest(format string, args ...any) *StatusError {
	return NewStatusError(http.StatusBadRequest, StatusReasonBadRequest, format, args...)
}

// NewGone reports a watch revision that was compacted away.
func NewGone(format string, args ...any) *StatusError {
	return NewStatusError(http.StatusGone, StatusReasonGone, format, args...)
}

// NewInvalid reports every field error of an object that breaks a rule (422).
func NewInvalid(kind, name string, errs FieldErrors) *StatusError {
	causes := make([]StatusCause, 0, len(errs))
	msgs := make([]string, 0, len(errs))
	for _, fe := range errs {
		causes = append(causes, StatusCause{Type: "Field" + string(fe.Type), Message: fe.Message(), Field: fe.Field})
		msgs = append(msgs, fe.Error())
	}
	e := NewStatusError(http.StatusUnprocessableEntity, StatusReasonInvalid,
		"%s %q is invalid: %s", kind, name, strings.Join(msgs, ", "))
	e.Status.Details = &StatusDetails{Name: name, Kind: kind, Causes: causes}
	return e
}

// ReasonOf returns the StatusReason of err if it is (or wraps) a
// *StatusError, and "" otherwise.
func ReasonOf(err error) StatusReason {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status.Reason
	}
	return ""
}

// IsNotFound reports whether err is a NotFound StatusError.
func IsNotFound(err error) bool { return ReasonOf(err) == StatusReasonNotFound }

// IsConflict reports whether err is a Conflict StatusError.
func IsConflict(err error) bool { return ReasonOf(err) == StatusReasonConflict }

// IsAlreadyExists reports whether err is an AlreadyExists StatusError.
func IsAlreadyExists(err error) bool { return ReasonOf(err) == StatusReasonAlreadyExists }

// IsForbidden reports whether err is a Forbidden StatusError.
func IsForbidden(err error) bool { return ReasonOf(err) == StatusReasonForbidden }
