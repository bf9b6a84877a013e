package filestore

import (
	"errors"
	"fmt"
)

// Sentinel kinds callers branch on with errors.Is. Every *Error wraps one.
var (
	ErrNotFound     = errors.New("not found")
	ErrInvalid      = errors.New("invalid input")
	ErrExists       = errors.New("already exists")
	ErrConflict     = errors.New("conflict")
	ErrUnauthorized = errors.New("unauthorized")
	ErrCorrupt      = errors.New("corrupt file")
)

// Error is a store failure with a stable machine code (the seeds' error codes, such as
// "invalid_status_transition"), a message naming what was wrong, and a hint saying what to
// do next. The MCP layer turns it into {"error","message","hint"}; the CLI prints message
// and hint.
type Error struct {
	Code    string
	Message string
	Hint    string
	Kind    error
	// Fields are facts the seeds put beside the code in the error response (e.g. from_agent_id
	// and to_agent_id of conversation_required_for_ai_to_ai); the MCP layer adds them to
	// the error object.
	Fields map[string]any
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel kind, so errors.Is(err, ErrNotFound) works.
func (e *Error) Unwrap() error { return e.Kind }

func newErr(kind error, code, hint, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Hint: hint, Kind: kind}
}

// CorruptError reports a file that cannot be read as what it should be, with the position
// of the problem, so that both `aipm doctor` and a refused write name `path:line`.
type CorruptError struct {
	Path    string // relative to the repository root
	Line    int    // 1-based; 0 when unknown
	Problem string
}

func (e *CorruptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Problem)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Problem)
}

// Unwrap reports ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
