package controller

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrClosed is returned by Handle after Close.
var ErrClosed = errors.New("controller: closed")

// apiError is Kafka's ApiError: an error code and an optional message. A nil
// *apiError is success (ApiError.NONE).
type apiError struct {
	err *kerr.Error
	msg *string
}

// newAPIError is ApiError(Errors, message).
func newAPIError(e *kerr.Error, format string, args ...any) *apiError {
	m := format
	if len(args) > 0 {
		m = fmt.Sprintf(format, args...)
	}
	return &apiError{err: e, msg: &m}
}

// defaultAPIError is ApiError(Errors): the message is the error's default
// description.
func defaultAPIError(e *kerr.Error) *apiError {
	m := e.Description
	return &apiError{err: e, msg: &m}
}

// bareAPIError is what ApiError.fromThrowable gives for an exception without
// a message of its own: no message.
func bareAPIError(e *kerr.Error) *apiError {
	return &apiError{err: e}
}

func (a *apiError) Error() string {
	if a == nil {
		return "NONE"
	}
	if a.msg != nil {
		return a.err.Message + ": " + *a.msg
	}
	return a.err.Message
}

func (a *apiError) String() string { return a.Error() }

// code is the wire error code (0 for success).
func (a *apiError) code() int16 {
	if a == nil {
		return 0
	}
	return a.err.Code
}

// message is the wire error message (nil for success or none).
func (a *apiError) message() *string {
	if a == nil {
		return nil
	}
	return a.msg
}

func strp(s string) *string { return &s }
