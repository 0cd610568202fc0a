package errcode

// the frame protocol's codes. error.code is an open string; these are the known
// core codes, spelled exactly as the spec spells them.
const (
	ParseFailed        Code = "PARSE_FAILED"
	ThreadConflict     Code = "THREAD_CONFLICT"
	NetworkError       Code = "NETWORK_ERROR"
	ResetFailed        Code = "RESET_FAILED"
	Cancelled          Code = "CANCELLED"
	Superseded         Code = "SUPERSEDED"
	UnsupportedVersion Code = "UNSUPPORTED_VERSION"
	ConsentRequired    Code = "CONSENT_REQUIRED" // reserved
	AuthRequired       Code = "AUTH_REQUIRED"    // reserved
	HostError          Code = "HOST_ERROR"
)

// The net capability's registry (Part I R5, Appendix A as Part III §14
// and §15 use it).
const (
	NetInvalidRequest         Code = "NET_INVALID_REQUEST"
	NetNotApproved            Code = "NET_NOT_APPROVED"
	NetImportedUnapproved     Code = "NET_IMPORTED_UNAPPROVED"
	NetAmbiguousConnection    Code = "NET_AMBIGUOUS_CONNECTION"
	NetSchemeBlocked          Code = "NET_SCHEME_BLOCKED"
	NetHostBlocked            Code = "NET_HOST_BLOCKED"
	NetSSRFBlocked            Code = "NET_SSRF_BLOCKED"
	NetConfirmDenied          Code = "NET_CONFIRM_DENIED"
	NetRedirectBlocked        Code = "NET_REDIRECT_BLOCKED"
	NetSizeExceeded           Code = "NET_SIZE_EXCEEDED"
	NetFetchFailed            Code = "NET_FETCH_FAILED"
	NetAuthFailed             Code = "NET_AUTH_FAILED"
	NetScrubbedHeaderStripped Code = "NET_SCRUBBED_HEADER_STRIPPED" // reserved
)

// snugd's own codes: the loopback API and the writers. They never
// travel inside a net-response frame.
const (
	Internal              Code = "INTERNAL"
	BadRequest            Code = "BAD_REQUEST"
	NotFound              Code = "NOT_FOUND"
	RequirementInvalid    Code = "REQUIREMENT_INVALID"
	ConnectionNotFound    Code = "CONNECTION_NOT_FOUND"
	ConnectionApproved    Code = "CONNECTION_APPROVED"
	ConnectionRevoked     Code = "CONNECTION_REVOKED"
	ConnectionNotDeclared Code = "CONNECTION_NOT_DECLARED"
	ConnectionNotApproved Code = "CONNECTION_NOT_APPROVED"
	NoPendingChange       Code = "NO_PENDING_CHANGE"
	ConnectionNotRevoked  Code = "CONNECTION_NOT_REVOKED"
	SlotCapReached        Code = "SLOT_CAP_REACHED"
	SlotMismatch          Code = "SLOT_MISMATCH"
	FieldUnknown          Code = "FIELD_UNKNOWN"
	DirectiveInvalid      Code = "DIRECTIVE_INVALID"
	StarterNotVouched     Code = "STARTER_NOT_VOUCHED"
	ImportInvalid         Code = "IMPORT_INVALID"
	StandingArmed         Code = "STANDING_ARMED"
	ConfirmWithdrawn      Code = "CONFIRM_WITHDRAWN"
)

// The loopback API's own refusals (api/API.md): the security chain and host
// pairing. Like the codes above, they never travel inside a frame.
const (
	Unauthorized         Code = "UNAUTHORIZED"
	Forbidden            Code = "FORBIDDEN"
	MethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	PayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	RateLimited          Code = "RATE_LIMITED"
	PairingNotFound      Code = "PAIRING_NOT_FOUND"
	PairingRedeemed      Code = "PAIRING_REDEEMED"
	VerifierMismatch     Code = "VERIFIER_MISMATCH"
	HostNotFound         Code = "HOST_NOT_FOUND"
)

// The pairing ceremonies' own refusals (api/API.md).
const (
	// ClaimRefused: a token claim was refused. The message is
	// one of daemon/claim's fixed sentences.
	ClaimRefused Code = "CLAIM_REFUSED"
)

// Grant integrity and host isolation: review-bound approval,
// app ownership and request bodies that never arrive.
const (
	ReviewStale    Code = "REVIEW_STALE"
	AppNotFound    Code = "APP_NOT_FOUND"
	RequestTimeout Code = "REQUEST_TIMEOUT"
)

// The exchange pairing family (Hue bridges).
const (
	// LANRefused: a LAN discovery, verify probe or link-button pairing was
	// refused. The message is one of lan's fixed sentences.
	LANRefused Code = "LAN_REFUSED"
)

// Pairing invitations: the administrator's lane past a
// flood of desktop pairing requests.
const (
	// InvitationInvalid: a pairing request carried an invitation snugd
	// does not hold for that name. One fixed answer: it never says
	// whether the invitation was wrong, expired, used or another name's.
	InvitationInvalid Code = "INVITATION_INVALID"
	// InvitationCapReached: as many invitations as snugd keeps are
	// waiting to be used.
	InvitationCapReached Code = "INVITATION_CAP_REACHED"
)

// The record's own refusal: a write that the data directory's disk
// cannot hold.
const (
	// StorageFull: the disk holding snugd's data directory is full or
	// read-only, so nothing was changed. The same request succeeds once
	// space returns.
	StorageFull Code = "STORAGE_FULL"
)

// A web page whose origin is not, or is no longer, paired: the one
// refusal such a page can read.
const (
	// NotPaired: a request from a web page to an authenticated route
	// carried no token that is valid for its origin (never paired,
	// unpaired, or a token of another host). The page pairs again.
	NotPaired Code = "NOT_PAIRED"
)

// A ceremony that would replace a working credential.
const (
	// AlreadyConnected: the connection holds a working credential (a
	// linked device, a claimed access, a paired bridge's key, OAuth
	// tokens) and the ceremony was started without replace. Nothing was
	// changed; the old credential keeps working until a replacement
	// commits.
	AlreadyConnected Code = "ALREADY_CONNECTED"
)

// numCodes is the length of the registry. Appending a code means
// appending an entry to table and raising this number by one.
const numCodes = 62

// table is the registry: one ordered list, append-only. Never rename,
// reorder or delete an entry; a retired code stays here with Reserved set.
// New codes (the API's own, for instance) go at the end, and
// testdata/codes.golden is rewritten with `go test ./daemon/errcode
// -update`, which refuses any change that is not an append.
//
// Retryable answers one question: may the same request, sent again
// unchanged, succeed? Part I names the flag but Appendix A, which would
// list it, is not available, so these are snugd's readings:
// transient failures are retryable; refusals that need the user, the
// app's author or a different request are not.
func table() [numCodes]Entry {
	return [numCodes]Entry{
		// Part I R5.
		{Code: ParseFailed, Retryable: true, Meaning: "the agent's reply was not a JSON object; attemptsRemaining says how many tries are left"},
		{Code: ThreadConflict, Retryable: true, Meaning: "another turn holds the thread; retry after 100, 250, then 500 ms"},
		{Code: NetworkError, Retryable: true, Meaning: "the host could not reach its agent endpoint"},
		{Code: ResetFailed, Retryable: true, Meaning: "the explicit reset of the thread did not complete"},
		{Code: Cancelled, Meaning: "the request was cancelled by snug:app-cancel"},
		{Code: Superseded, Meaning: "a new snug:app-announce from the same iframe invalidated the request"},
		{Code: UnsupportedVersion, Meaning: "the frame's v (or the envelope's snug) is not a supported protocol version"},
		{Code: ConsentRequired, Reserved: true, Meaning: "reserved: no current meaning, never emitted"},
		{Code: AuthRequired, Reserved: true, Meaning: "reserved: no current meaning, never emitted"},
		{Code: HostError, Retryable: true, Meaning: "the host failed for a reason of its own; also how unknown codes render"},

		// Net registry.
		{Code: NetInvalidRequest, Meaning: "the net-request frame is malformed, or a connection URL is malformed or names an unknown slot"},
		{Code: NetNotApproved, Meaning: "no approved connection of the app claims the host"},
		{Code: NetImportedUnapproved, Meaning: "the only claimant is an imported row not yet approved on this device"},
		{Code: NetAmbiguousConnection, Meaning: "two approved connections claim the host, or a connection's ceiling is not exactly one host"},
		{Code: NetSchemeBlocked, Meaning: "the URL's scheme is not admitted (https only, with the one LAN admission)"},
		{Code: NetHostBlocked, Meaning: "approved connections exist but none has the host in its ceiling"},
		{Code: NetSSRFBlocked, Meaning: "the destination address is loopback, private, link-local, metadata or otherwise refused"},
		{Code: NetConfirmDenied, Meaning: "the user declined the confirmation, or it timed out"},
		{Code: NetRedirectBlocked, Meaning: "the upstream answered 3xx; redirects are never followed"},
		{Code: NetSizeExceeded, Meaning: "the upstream body or the net-response frame exceeds its cap; nothing is truncated"},
		{Code: NetFetchFailed, Retryable: true, Meaning: "the transport failed: DNS, connect, TLS, a missing helper, or an invalid upstream answer"},
		{Code: NetAuthFailed, Meaning: "a token refresh or credential exchange failed; the connection needs the user"},
		{Code: NetScrubbedHeaderStripped, Reserved: true, Meaning: "reserved: no current meaning, never emitted"},

		// snugd's API and writers.
		{Code: Internal, Retryable: true, Meaning: "snugd failed for a reason of its own; the log says why"},
		{Code: BadRequest, Meaning: "the API call is malformed: bad JSON, a missing or invalid field, a bad path parameter"},
		{Code: NotFound, Meaning: "no such route or resource"},
		{Code: RequirementInvalid, Meaning: "the requirement or a template fails validation; details lists every {path, rule}"},
		{Code: ConnectionNotFound, Meaning: "the app has no connection row in that slot"},
		{Code: ConnectionApproved, Meaning: "a declared-row write aimed at an approved row; a proposal stages instead"},
		{Code: ConnectionRevoked, Meaning: "the row is a revoked tombstone; only an explicit reconnect revives it"},
		{Code: ConnectionNotDeclared, Meaning: "approval needs a declared row"},
		{Code: ConnectionNotApproved, Meaning: "staging, revocation and re-approval need an approved row"},
		{Code: NoPendingChange, Meaning: "re-approval needs a staged change"},
		{Code: ConnectionNotRevoked, Meaning: "reconnect needs a revoked row"},
		{Code: SlotCapReached, Meaning: "the app already has 8 connection rows, tombstones included"},
		{Code: SlotMismatch, Meaning: "the requirement's slot differs from the slot it is written to"},
		{Code: FieldUnknown, Meaning: "a credential value names a field the requirement does not declare"},
		{Code: DirectiveInvalid, Meaning: "the connection_requirement directive is malformed"},
		{Code: StarterNotVouched, Meaning: "the install source or the installed HTML does not match a bundled starter"},
		{Code: ImportInvalid, Meaning: "the file is not an importable user DB"},
		{Code: StandingArmed, Meaning: "a standing approval is already armed; v1 allows one armed target per daemon"},

		// The loopback API's security chain and host pairing.
		{Code: Unauthorized, Meaning: "no host token, or one that belongs to no paired host"},
		{Code: Forbidden, Meaning: "the Host or Origin is refused, or the call is not allowed for this token or channel"},
		{Code: MethodNotAllowed, Meaning: "the route exists but not with this method"},
		{Code: PayloadTooLarge, Meaning: "the request body exceeds the route's limit; nothing of it was parsed"},
		{Code: UnsupportedMediaType, Meaning: "the request body is not application/json"},
		{Code: RateLimited, Retryable: true, Meaning: "too many failed authentications or pairing attempts; wait and retry"},
		{Code: PairingNotFound, Meaning: "no such pairing request, or no pending one with that code"},
		{Code: PairingRedeemed, Meaning: "the pairing's token was already released; pair again"},
		{Code: VerifierMismatch, Meaning: "the verifier does not hash to the pairing's challenge"},
		{Code: HostNotFound, Meaning: "no paired host with that id"},

		// The pairing ceremonies.
		{Code: ClaimRefused, Meaning: "a setup-token claim was refused; the message is a fixed sentence that says whether the token may be used up"},
		{Code: ConfirmWithdrawn, Meaning: "the confirm was withdrawn (its host was unpaired, or snugd is shutting down); the decision changed nothing"},

		// Grant integrity and host isolation.
		{Code: ReviewStale, Meaning: "the row changed since the review whose reviewToken the approval carries; review it again"},
		{Code: AppNotFound, Meaning: "no such app for this host: it belongs to another host or to the administrator"},
		{Code: RequestTimeout, Retryable: true, Meaning: "the request body did not arrive in time"},

		// The exchange pairing family.
		{Code: LANRefused, Meaning: "a LAN discovery, verify probe or link-button pairing was refused; the message is a fixed sentence"},

		// Pairing invitations.
		{Code: InvitationInvalid, Meaning: "the pairing invitation is not valid for this host name: wrong, expired or already used (which, it does not say)"},
		{Code: InvitationCapReached, Meaning: "8 pairing invitations are already waiting to be used; wait for one to expire, or invite one of their names again"},

		// A full or read-only disk.
		{Code: StorageFull, Retryable: true, Meaning: "the disk holding snugd's data is full or read-only; nothing was changed, and the same request succeeds once space returns"},

		// A web page that is not paired.
		{Code: NotPaired, Meaning: "this origin is not paired with snugd, or no longer is: pair again"},
		// A ceremony that would replace a working credential.
		{Code: AlreadyConnected, Meaning: "the connection already holds a working credential; start the ceremony again with replace: true to replace it (the old one keeps working until the new one is stored)"},
	}
}
