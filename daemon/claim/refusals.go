package claim

import "errors"

// Reason names why a token claim was refused: one entry of Refusals. A
// Reason is part of the API (the details of a CLAIM_REFUSED answer): never
// rename or reuse one.
type Reason string

// The reasons, in the order a claim meets them.
const (
	// Before anything is sent: the setup token is untouched.
	ReasonTokenShape     Reason = "token-shape"
	ReasonClaimScheme    Reason = "claim-scheme"
	ReasonClaimUserinfo  Reason = "claim-userinfo"
	ReasonClaimHost      Reason = "claim-host"
	ReasonClaimPath      Reason = "claim-path"
	ReasonAddressRefused Reason = "address-refused"
	ReasonUnreachable    Reason = "unreachable"
	ReasonNotBridge      Reason = "not-bridge"

	// After the claim POST was sent.
	ReasonTokenRefused      Reason = "token-refused"
	ReasonClaimRedirect     Reason = "claim-redirect"
	ReasonUncertain         Reason = "uncertain"
	ReasonAccessShape       Reason = "access-shape"
	ReasonAccessScheme      Reason = "access-scheme"
	ReasonAccessUserinfo    Reason = "access-userinfo"
	ReasonAccessHost        Reason = "access-host"
	ReasonAccessPath        Reason = "access-path"
	ReasonConnectionChanged Reason = "connection-changed"
	ReasonNotStored         Reason = "not-stored"
)

// Fate says what became of the setup token when a claim was refused.
type Fate string

const (
	// TokenUnused: nothing was sent to the claim URL; the token can be
	// pasted again.
	TokenUnused Fate = "unused"
	// TokenMaybeUsed: the claim was sent and its outcome is unknown. The
	// claim is never retried: the user creates a new token.
	TokenMaybeUsed Fate = "maybe-used"
	// TokenUsed: the bridge answered the claim; the token no longer works.
	TokenUsed Fate = "used"
)

// A Refusal is one entry of the fixed list: a reason, its sentence and
// the token's fate.
type Refusal struct {
	Reason   Reason
	Sentence string
	Fate     Fate
}

// Refusals returns the fixed list of claim refusals, in order: the only
// sentences a claim refusal ever carries (api/API.md, "SimpleFIN claim",
// lists them). None is derived from the pasted bytes or from the bridge's
// answer (P3-C12.12-23). The slice is the caller's own copy.
func Refusals() []Refusal {
	const (
		unused   = ", so the token was not used"
		nothing  = "; nothing was stored and the setup token is used up: create a new one"
		maybeNew = "; the setup token may be used up: create a new one"
	)
	return []Refusal{
		{ReasonTokenShape, "the pasted text is not a SimpleFIN setup token: copy the whole token from the bridge and paste it again", TokenUnused},
		{ReasonClaimScheme, "the setup token's claim address is not https" + unused, TokenUnused},
		{ReasonClaimUserinfo, "the setup token's claim address carries a user name or password" + unused, TokenUnused},
		{ReasonClaimHost, "the setup token's claim address is not on a host this connection was approved for" + unused, TokenUnused},
		{ReasonClaimPath, "the setup token's claim address does not have the SimpleFIN claim shape" + unused, TokenUnused},
		{ReasonAddressRefused, "the bridge's network address is not a public one, so the setup token was not used", TokenUnused},
		{ReasonUnreachable, "the SimpleFIN Bridge could not be reached, so the setup token was not used: try again", TokenUnused},
		{ReasonNotBridge, "the server did not answer as a SimpleFIN Bridge, so the setup token was not used", TokenUnused},

		{ReasonTokenRefused, "the SimpleFIN Bridge refused the setup token: it was already claimed or is not valid; create a new one", TokenUsed},
		{ReasonClaimRedirect, "the bridge answered the claim with a redirect, which is never followed" + maybeNew, TokenMaybeUsed},
		{ReasonUncertain, "the claim failed after it was sent" + maybeNew, TokenMaybeUsed},
		{ReasonAccessShape, "the bridge's answer to the claim is not exactly one access URL" + nothing, TokenUsed},
		{ReasonAccessScheme, "the access URL the bridge returned is not https" + nothing, TokenUsed},
		{ReasonAccessUserinfo, "the access URL the bridge returned carries no usable credentials" + nothing, TokenUsed},
		{ReasonAccessHost, "the access URL the bridge returned is not on a host this connection was approved for" + nothing, TokenUsed},
		{ReasonAccessPath, "the access URL the bridge returned does not have the pinned SimpleFIN access path" + nothing, TokenUsed},
		{ReasonConnectionChanged, "the connection was revoked or changed while the claim ran, so the access credentials were not stored; the setup token is used up: create a new one", TokenUsed},
		{ReasonNotStored, "the bridge issued access credentials but snugd could not store them, so nothing was kept; the setup token is used up: create a new one", TokenUsed},
	}
}

// Lookup returns the refusal of r, and reports whether r is on the list.
func Lookup(r Reason) (Refusal, bool) {
	for _, f := range Refusals() {
		if f.Reason == r {
			return f, true
		}
	}
	return Refusal{}, false
}

// Error is a claim refusal. Its text is the reason's fixed sentence.
type Error struct {
	Reason Reason
}

// Refuse returns the *Error for r. r must be on the list.
func Refuse(r Reason) *Error { return &Error{Reason: r} }

func (e *Error) Error() string {
	if f, ok := Lookup(e.Reason); ok {
		return f.Sentence
	}
	return "the claim was refused" // unreachable: every Reason is listed
}

// Fate reports what became of the setup token.
func (e *Error) Fate() Fate {
	f, _ := Lookup(e.Reason)
	return f.Fate
}

// ReasonOf reports the Reason of the *Error in err's chain, if any.
func ReasonOf(err error) (Reason, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, true
	}
	return "", false
}
