package errcode

// A Code is part of the public API: never rename, reuse, or delete one.
// Codes are open strings on the wire: a receiver that meets a
// code it does not know treats it per the error's retryable flag and
// renders it as HostError.
type Code string

// Error returns the code itself, so a bare Code can be returned as an error
// and matched with errors.Is.
func (c Code) Error() string { return string(c) }

// Error is a failure with a code. Msg is safe to show to the app and the
// user: it never carries a credential value, a token or a credentialed URL.
// Err is only logged.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

// New returns an Error with code c and the safe message msg.
func New(c Code, msg string) *Error { return &Error{Code: c, Msg: msg} }

// Wrap returns an Error with code c and the safe message msg that keeps err
// as its cause, for logs and errors.As; err never reaches a client.
func Wrap(c Code, msg string, err error) *Error { return &Error{Code: c, Msg: msg, Err: err} }

func (e *Error) Error() string        { return string(e.Code) + ": " + e.Msg }
func (e *Error) Unwrap() error        { return e.Err }
func (e *Error) Is(target error) bool { return target == e.Code }

// CodeOf reports the code err carries: the Code of the first *Error or
// Code in err's chain, or of an error that has a Code() Code method.
// It reports false when the chain carries none.
func CodeOf(err error) (Code, bool) {
	for err != nil {
		switch e := err.(type) {
		case *Error:
			return e.Code, true
		case Code:
			return e, true
		case interface{ ErrorCode() Code }:
			return e.ErrorCode(), true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if c, ok := CodeOf(inner); ok {
					return c, true
				}
			}
			return "", false
		default:
			return "", false
		}
	}
	return "", false
}

// An Entry is one registered code: whether a client may retry the same
// request unchanged and expect a different outcome, whether the code is
// reserved (registered, with no current meaning, and never emitted), and
// what it means, in one line.
type Entry struct {
	Code      Code
	Retryable bool
	Reserved  bool
	Meaning   string
}

// Lookup returns the registry entry for c, and reports whether c is
// registered.
func Lookup(c Code) (Entry, bool) {
	for _, e := range table() {
		if e.Code == c {
			return e, true
		}
	}
	return Entry{}, false
}

// Emittable reports whether snugd may send c to a client: c is registered
// and not reserved (reserved codes are never emitted).
func Emittable(c Code) bool {
	e, ok := Lookup(c)
	return ok && !e.Reserved
}
