package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hostauth"
)

// The request and response bodies of the API, with JSON names exactly as
// API.md spells them. Domain types in daemon carry no JSON tags; these
// structs are the only place the wire names are written. Times are UTC
// RFC 3339 with milliseconds ("2026-05-01T10:00:00.000Z"), as a Snug
// host's JavaScript Date.toISOString writes them.

// timeFormat is the API's time spelling.
const timeFormat = "2006-01-02T15:04:05.000Z"

// Time is a timestamp in timeFormat.
type Time struct{ time.Time }

// MarshalJSON writes t in timeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(timeFormat) + `"`), nil
}

// UnmarshalJSON reads timeFormat (or any RFC 3339 time).
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

func timePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}

func millisPtr(ms *int64) *Time {
	if ms == nil {
		return nil
	}
	return &Time{time.UnixMilli(*ms)}
}

// Health is GET /v1/health: nothing but that snugd answers, and its
// version.
type Health struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
}

// PairRequest is POST /v1/hosts/pair.
type PairRequest struct {
	Name      string `json:"name"`
	Surface   string `json:"surface"` // web | desktop
	Origin    string `json:"origin,omitempty"`
	Challenge string `json:"challenge"` // BASE64URL(SHA256(verifier))
	// Invitation is an administrator's invitation (snugd ctl hosts invite
	// NAME), desktop only: the request is then recorded approved.
	Invitation string `json:"invitation,omitempty"`
}

// PairResponse answers POST /v1/hosts/pair.
type PairResponse struct {
	PairingID string `json:"pairingId"`
	// Code is what the user approves: snugd ctl hosts approve CODE. An
	// invited request has none: it is approved already.
	Code      string `json:"code,omitempty"`
	State     string `json:"state"` // pending, or approved for an invited request
	Invited   bool   `json:"invited,omitempty"`
	ExpiresAt Time   `json:"expiresAt"`
}

// InviteRequest is POST /v1/hosts/invite (ctl).
type InviteRequest struct {
	Name    string `json:"name"`
	Surface string `json:"surface,omitempty"` // desktop, the only surface invited
}

// InviteResponse answers POST /v1/hosts/invite: the invitation, exactly
// once (snugd keeps only its SHA-256).
type InviteResponse struct {
	Invitation   string `json:"invitation"`
	InvitationID string `json:"invitationId"`
	Name         string `json:"name"`
	Surface      string `json:"surface"`
	ExpiresAt    Time   `json:"expiresAt"`
}

// InvitationJSON is an invitation waiting to be used, as the ctl channel
// lists it: never its value.
type InvitationJSON struct {
	InvitationID string `json:"invitationId"`
	Name         string `json:"name"`
	Surface      string `json:"surface"`
	ExpiresAt    Time   `json:"expiresAt"`
	CreatedAt    Time   `json:"createdAt"`
}

// RedeemRequest is POST /v1/hosts/pair/{pairingId}/redeem.
type RedeemRequest struct {
	Verifier string `json:"verifier"`
}

// RedeemResponse answers a redeem: the state, and exactly once, when it is
// approved, the host token.
type RedeemResponse struct {
	State string `json:"state"` // pending | approved | denied | expired
	Token string `json:"token,omitempty"`
}

// CodeRequest is POST /v1/hosts/approve and /v1/hosts/deny (ctl).
type CodeRequest struct {
	Code string `json:"code"`
}

// PairingJSON is a pairing request as the ctl channel shows it.
type PairingJSON struct {
	PairingID string `json:"pairingId"`
	Code      string `json:"code"`
	Name      string `json:"name"`
	Surface   string `json:"surface"`
	Origin    string `json:"origin,omitempty"`
	State     string `json:"state"`
	ExpiresAt Time   `json:"expiresAt"`
	CreatedAt Time   `json:"createdAt"`
}

func pairingJSON(p hostauth.Pairing) PairingJSON {
	return PairingJSON{
		PairingID: p.ID, Code: p.Code, Name: p.Name, Surface: string(p.Surface), Origin: p.Origin,
		State: string(p.State), ExpiresAt: Time{p.ExpiresAt}, CreatedAt: Time{p.CreatedAt},
	}
}

// HostJSON is a paired host. It never carries the token or its hash.
type HostJSON struct {
	HostID     string `json:"hostId"`
	Name       string `json:"name"`
	Surface    string `json:"surface"`
	Origin     string `json:"origin,omitempty"`
	CreatedAt  Time   `json:"createdAt"`
	LastSeenAt *Time  `json:"lastSeenAt,omitempty"`
}

// HostsResponse is GET /v1/hosts (ctl): paired hosts, the pairing
// requests waiting for approval and the invitations waiting to be used.
type HostsResponse struct {
	Hosts       []HostJSON       `json:"hosts"`
	Pending     []PairingJSON    `json:"pending"`
	Invitations []InvitationJSON `json:"invitations"`
}

// DecisionResponse answers POST /v1/hosts/approve and /v1/hosts/deny.
type DecisionResponse struct {
	Pairing PairingJSON `json:"pairing"`
}

// DeletedResponse answers DELETE /v1/hosts/{hostId}.
type DeletedResponse struct {
	HostID  string `json:"hostId"`
	Deleted bool   `json:"deleted"`
}

// StatusResponse is GET /v1/status (and snugd ctl status --json). It never
// carries a credential or a token.
type StatusResponse struct {
	Version         string             `json:"version"`
	StartedAt       Time               `json:"startedAt"`
	UptimeSeconds   int64              `json:"uptimeSeconds"`
	DataDir         string             `json:"dataDir"`
	Listen          string             `json:"listen,omitempty"`
	TransportPolicy string             `json:"transportPolicy"`
	Apps            int                `json:"apps"`
	Connections     ConnectionCounts   `json:"connections"`
	Hosts           HostCounts         `json:"hosts"`
	Helpers         []HelperStatusJSON `json:"helpers"`
	// HelperSandbox is the sandbox linked-device helpers run in; absent
	// when no helper supervisor runs.
	HelperSandbox   *HelperSandboxJSON `json:"helperSandbox,omitempty"`
	Standing        []StandingJSON     `json:"standing"`
	PendingConfirms int                `json:"pendingConfirms"`
	// Database is the database's state: "ok"; "damaged" with the
	// sentence in DatabaseMessage (every write is then refused until a
	// restart); or "unwritable" with the journal's sentence in
	// DatabaseMessage and since when in UnwritableSince (its disk is full
	// or read-only: every credentialed request is refused before its
	// send, until a write succeeds again, which clears it by itself).
	// DiskFree is the free space of the data directory's disk in bytes,
	// absent when it cannot be read.
	Database        string `json:"database"`
	DatabaseMessage string `json:"databaseMessage,omitempty"`
	UnwritableSince *Time  `json:"unwritableSince,omitempty"`
	DiskFree        uint64 `json:"diskFreeBytes,omitempty"`
	// Goroutines is the daemon's goroutine count, on the ctl channel
	// only (a paired host never sees it).
	Goroutines int `json:"goroutines,omitempty"`
}

// HelperSandboxJSON is StatusResponse.helperSandbox: the Landlock ABI
// enforced on helpers (0: none), what it narrows, no_new_privs, whether
// every descendant ends with its session, and the one-line summary ctl
// prints.
type HelperSandboxJSON struct {
	Landlock    int    `json:"landlock"`
	Files       bool   `json:"files"`
	Network     bool   `json:"network"`
	Scoped      bool   `json:"scoped"`
	NoNewPrivs  bool   `json:"noNewPrivs"`
	Descendants bool   `json:"descendants"`
	Summary     string `json:"summary"`
}

// ConnectionCounts counts connection rows (StatusResponse.connections).
type ConnectionCounts struct {
	Total           int `json:"total"`
	Declared        int `json:"declared"`
	Approved        int `json:"approved"`
	Revoked         int `json:"revoked"`
	NeedsReapproval int `json:"needsReapproval"`
	Imported        int `json:"imported"`
	Invalid         int `json:"invalid"`
	Unreadable      int `json:"unreadable"`
}

// HostCounts counts paired hosts (StatusResponse.hosts).
type HostCounts struct {
	Paired          int `json:"paired"`
	PendingPairings int `json:"pendingPairings"`
}

// HelperStatusJSON is one linked-device helper.
type HelperStatusJSON struct {
	HelperID  string `json:"helperId"`
	State     string `json:"state"`
	Sessions  int    `json:"sessions"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
}

// ConnectionsResponse is GET /v1/apps/{appId}/connections.
type ConnectionsResponse struct {
	Connections []ConnectionJSON `json:"connections"`
}

// ConnectionResponse answers the writers (approve, reapprove, revoke,
// reconnect).
type ConnectionResponse struct {
	Connection ConnectionJSON `json:"connection"`
}

// RevokeResponse is the revoke answer: the row, and remoteRevocation when
// the provider did not confirm an OAuth revocation (a fixed sentence).
type RevokeResponse struct {
	Connection ConnectionJSON `json:"connection"`
	// RemoteRevocation is the fixed sentence of Remote when access may
	// remain at the provider (it failed, or nothing snugd can call
	// withdraws it).
	RemoteRevocation string `json:"remoteRevocation,omitempty"`
	// Remote is what the revocation did at the provider, for an OAuth
	// connection; absent when there was nothing outside snugd.
	Remote *RemoteRevocationJSON `json:"remote,omitempty"`
}

// RemoteRevocationJSON is a revocation's remote side: outcome "revoked",
// "already-revoked", "access-remains" or "failed", a fixed sentence, and
// where the person removes access when the provider's entry names it.
type RemoteRevocationJSON struct {
	Outcome         string `json:"outcome"`
	Message         string `json:"message"`
	ManageAccessURL string `json:"manageAccessUrl,omitempty"`
}

// ConnectionJSON is one connection row with its dynamic state. It never
// carries a credential value.
type ConnectionJSON struct {
	AppID              string          `json:"appId"`
	Slot               string          `json:"slot"`
	Status             string          `json:"status"` // declared | approved | revoked
	NeedsReapproval    bool            `json:"needsReapproval"`
	Requirement        json.RawMessage `json:"requirement"`
	PendingRequirement json.RawMessage `json:"pendingRequirement"` // null when none
	RequirementVersion int64           `json:"requirementVersion"`
	AllowedHosts       []string        `json:"allowedHosts"`
	Provenance         string          `json:"provenance"`
	Confidence         *float64        `json:"confidence"` // display-only
	Imported           bool            `json:"imported"`
	// Borrowed says the registry supplied the requirement's pinned values
	// (provenance registry): the review discloses it.
	Borrowed   bool           `json:"borrowed"`
	CreatedAt  Time           `json:"createdAt"`
	UpdatedAt  Time           `json:"updatedAt"`
	ApprovedAt *Time          `json:"approvedAt"`
	RevokedAt  *Time          `json:"revokedAt"` // survives reconnect, disclosed on review
	Invalid    []Detail       `json:"invalid,omitempty"`
	State      *ConnStateJSON `json:"state"` // null before any credential or flow
	// Standing is the standing approval armed on the connection, null when
	// none (disclosed wherever the connection is).
	Standing *StandingJSON `json:"standing"`
}

// ConnStateJSON is a slot's dynamic state: never a credential.
type ConnStateJSON struct {
	Status          string      `json:"status"` // pending | connected | expired | error
	ObtainedAt      *Time       `json:"obtainedAt,omitempty"`
	ExpiresIn       *int64      `json:"expiresIn,omitempty"` // seconds after obtainedAt
	ScopesGranted   []string    `json:"scopesGranted,omitempty"`
	LastError       string      `json:"lastError,omitempty"`
	LANPin          *LANPinJSON `json:"lanPin,omitempty"`
	LANVerifiedAt   *Time       `json:"lanVerifiedAt,omitempty"`
	LinkVerifiedAt  *Time       `json:"linkVerifiedAt,omitempty"`
	ClaimVerifiedAt *Time       `json:"claimVerifiedAt,omitempty"`
}

// LANPinJSON is a LAN device's certificate pin (a public fingerprint).
type LANPinJSON struct {
	Fingerprint string `json:"fingerprint"`
	CN          string `json:"cn,omitempty"`
}

func connectionJSON(c grants.Connection, st *grants.ConnState) ConnectionJSON {
	j := ConnectionJSON{
		AppID: c.AppID, Slot: c.Slot, Status: string(c.Status), NeedsReapproval: c.NeedsReapproval(),
		Requirement: json.RawMessage(c.RequirementJSON), PendingRequirement: json.RawMessage("null"),
		RequirementVersion: c.RequirementVersion, AllowedHosts: c.AllowedHosts, Provenance: string(c.Provenance),
		Confidence: c.Confidence, Imported: c.Imported, Borrowed: c.Borrowed,
		CreatedAt: Time{c.CreatedAt}, UpdatedAt: Time{c.UpdatedAt}, ApprovedAt: timePtr(c.ApprovedAt), RevokedAt: timePtr(c.RevokedAt),
	}
	if !json.Valid(j.Requirement) {
		j.Requirement = json.RawMessage("null")
	}
	if c.PendingJSON != "" && json.Valid([]byte(c.PendingJSON)) {
		j.PendingRequirement = json.RawMessage(c.PendingJSON)
	}
	if j.AllowedHosts == nil {
		j.AllowedHosts = []string{}
	}
	for _, v := range c.Invalid {
		j.Invalid = append(j.Invalid, Detail{Path: v.Path, Rule: v.Rule})
	}
	if st != nil {
		s := &ConnStateJSON{
			Status: string(st.Status), ObtainedAt: millisPtr(st.ObtainedAt), ExpiresIn: st.ExpiresIn,
			ScopesGranted: st.ScopesGranted, LastError: st.LastError, LANVerifiedAt: millisPtr(st.LANVerifiedAt),
			LinkVerifiedAt: millisPtr(st.LinkVerifiedAt), ClaimVerifiedAt: millisPtr(st.ClaimVerifiedAt),
		}
		if st.LANPin != nil {
			s.LANPin = &LANPinJSON{Fingerprint: st.LANPin.Fingerprint, CN: st.LANPin.CN}
		}
		j.State = s
	}
	return j
}

// CredentialsRequest is PUT …/{slot}/credentials: field key → value. The
// values are write-only: no response ever carries one.
type CredentialsRequest struct {
	Fields map[string]string `json:"fields"`
}

// SchemasResponse is GET /v1/schemas.
type SchemasResponse struct {
	Types []string `json:"types"`
}

// EventData is the data of one /v1/events hint: references only,
// never content. Each event type fills its own fields.
type EventData struct {
	ID       string `json:"id,omitempty"`       // confirm-pending
	AppID    string `json:"appId,omitempty"`    // connection-changed
	Slot     string `json:"slot,omitempty"`     // connection-changed
	FlowID   string `json:"flowId,omitempty"`   // flow-updated
	HelperID string `json:"helperId,omitempty"` // helper-changed
}

// Event is one hint of the /v1/events stream, as Client.Events delivers
// it.
type Event struct {
	Type string // confirm-pending | connection-changed | flow-updated | helper-changed
	Data EventData
}

// PutConnectionRequest is PUT /v1/apps/{appId}/connections/{slot}, the
// user channel.
type PutConnectionRequest struct {
	Requirement json.RawMessage `json:"requirement"`
}

// InstallRequest is POST /v1/apps/{appId}/install, the install channel:
// the app's install source (the starter's id) and the SHA-256 (64 hex
// digits) of the pinned factory HTML and of the current HTML.
// Connection, the starter's connection.json as the host has it, is
// accepted and never used: a vouched install proposes snugd's own bundled
// copy.
type InstallRequest struct {
	StarterID     string          `json:"starterId"`
	FactorySHA256 string          `json:"factorySha256"`
	CurrentSHA256 string          `json:"currentSha256"`
	Connection    json.RawMessage `json:"connection,omitempty"`
}

// OptionRequest is POST …/{slot}/option: pick a registry entry's
// alternative flow, on the user channel.
type OptionRequest struct {
	OptionID string `json:"optionId"`
}

// ProposalJSON is what a proposal did.
type ProposalJSON struct {
	Connection ConnectionJSON `json:"connection"`
	// Staged: the row was approved, so the proposal waits for re-approval
	// (needsReapproval) instead of replacing it.
	Staged bool `json:"staged"`
	// Unchanged: the row was approved and the proposal is its requirement
	// already, so nothing was staged (a change staged before is withdrawn).
	Unchanged bool `json:"unchanged"`
	// Borrowed: the registry's pinned values replaced the declared ones;
	// Disclosure is the sentence to show beside them.
	Borrowed   bool   `json:"borrowed"`
	Disclosure string `json:"disclosure,omitempty"`
	EntryID    string `json:"entryId,omitempty"`
	// ClaimedProvenance and ClaimedConfidence are what a directive claimed:
	// display-only, never an approval input.
	ClaimedProvenance string   `json:"claimedProvenance,omitempty"`
	ClaimedConfidence *float64 `json:"claimedConfidence,omitempty"`
}

// ProposalResponse answers the user channel and the assistant channel.
type ProposalResponse struct {
	Proposal ProposalJSON `json:"proposal"`
}

// InstallResponse answers the install channel: one proposal per slot the
// starter declares.
type InstallResponse struct {
	Proposals []ProposalJSON `json:"proposals"`
}

// ReviewResponse is GET …/{slot}/review: what a review or re-approval
// screen shows.
type ReviewResponse struct {
	Connection ConnectionJSON `json:"connection"`
	// Posture: manual (the user typed it), strong (a model or a starter
	// proposed it: review field by field) or pinned (the registry's values).
	Posture    string      `json:"posture"`
	Borrowed   bool        `json:"borrowed"`
	Disclosure string      `json:"disclosure,omitempty"`
	Diff       []FieldDiff `json:"diff"`
	Hosts      []string    `json:"hosts"`
	// PendingHosts and PendingScopes are what re-approval would freeze;
	// null without a staged change.
	PendingHosts  []string `json:"pendingHosts"`
	Scopes        []string `json:"scopes"`
	PendingScopes []string `json:"pendingScopes"`
	// Instructions are plain text: render them as a numbered list, never
	// as HTML or links.
	Instructions []string `json:"instructions"`
	ConsoleURL   string   `json:"consoleUrl,omitempty"`
	ConsoleHost  string   `json:"consoleHost,omitempty"` // show it in full beside the URL
	// PairingFamily is the registry's pairing family ("" when none);
	// PairingOwed is true while the slot lacks that family's verify marker.
	PairingFamily string `json:"pairingFamily,omitempty"`
	PairingOwed   bool   `json:"pairingOwed"`
	// Replaced is, on an imported row, the local row the import
	// replaced and the diff from it to this row; absent otherwise.
	Replaced *ReplacedJSON `json:"replaced,omitempty"`
	// ReviewToken commits to what this review shows; approve and
	// reapprove must send it back (ApproveRequest).
	ReviewToken string `json:"reviewToken"`
}

// ReplacedJSON is the local row an imported row replaced: its status
// ("approved": it was a grant on this device, approved at approvedAt),
// version, ceiling, whether the import wiped the slot's credentials, and
// the field-by-field diff from it (old) to the imported row (new).
type ReplacedJSON struct {
	Status             string      `json:"status"`
	ApprovedAt         *Time       `json:"approvedAt"`
	RequirementVersion int64       `json:"requirementVersion"`
	Hosts              []string    `json:"hosts"`
	CredentialsCleared bool        `json:"credentialsCleared"`
	ReplacedAt         Time        `json:"replacedAt"`
	Diff               []FieldDiff `json:"diff"`
}

// ApproveRequest is the body of POST …/{slot}/approve and …/reapprove:
// the reviewToken of the review the user saw.
type ApproveRequest struct {
	ReviewToken string `json:"reviewToken"`
}

// AccessResponse answers GET /v1/apps/{appId}/access (ctl): the host that
// owns the app ("" when it is the administrator's) and the hosts it is
// shared with.
type AccessResponse struct {
	AppID  string   `json:"appId"`
	Owner  string   `json:"owner"`
	Shared []string `json:"shared"`
}

// ShareRequest is POST /v1/apps/{appId}/shares (ctl).
type ShareRequest struct {
	HostID string `json:"hostId"`
}

// FieldDiff is one leaf that differs between the current and the staged
// requirement: old and new as JSON values, null when absent.
type FieldDiff struct {
	Path string          `json:"path"`
	Old  json.RawMessage `json:"old"`
	New  json.RawMessage `json:"new"`
}

// ImportReportJSON answers POST /v1/import (ctl).
type ImportReportJSON struct {
	Restored int          `json:"restored"`
	Demoted  int          `json:"demoted"`
	Dropped  []DroppedRow `json:"dropped"`
	// Landed lists every row that landed declared and imported.
	Landed []LandedRow `json:"landed"`
}

// LandedRow is a row import landed declared and imported: replaced says it
// replaced a local row, credentialsCleared that the slot's credentials
// (and its connection state) were wiped because the rows differ.
type LandedRow struct {
	AppID              string `json:"appId"`
	Slot               string `json:"slot"`
	Replaced           bool   `json:"replaced"`
	CredentialsCleared bool   `json:"credentialsCleared"`
}

// DroppedRow is a row import refused, with a fixed reason.
type DroppedRow struct {
	AppID  string `json:"appId"`
	Slot   string `json:"slot"`
	Reason string `json:"reason"`
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func rawOrNull(s *string) json.RawMessage {
	if s == nil || !json.Valid([]byte(*s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(*s)
}

// NetRequest is POST /v1/net: the app's snug:net-request frame exactly as
// the app posted it, the host-assigned identity of the app that sent it
// (never read from the frame), and where the answer goes: "app" (the
// iframe) or "llm" (the model, with the harder scrub).
type NetRequest struct {
	AppID    string          `json:"appId"`
	Frame    json.RawMessage `json:"frame"`
	Delivery string          `json:"delivery"`
}

// ConfirmJSON is a parked confirm: what the host asks the user about.
type ConfirmJSON struct {
	ID     string `json:"id"`
	AppID  string `json:"appId"`
	Host   string `json:"host"`   // the resolved host, in full
	Method string `json:"method"` //
	URL    string `json:"url"`    // the full URL as it will be sent
	Slot   string `json:"slot,omitempty"`
	// BodyPreview is the start of the request body, for the user to read.
	BodyPreview string `json:"bodyPreview,omitempty"`
	// Probe marks a connection test (the wizard's probe path).
	Probe bool `json:"probe"`
	// Delivery "llm": the chat lane may render the confirm inline.
	Delivery  string `json:"delivery"`
	CreatedAt Time   `json:"createdAt"`
	ExpiresAt Time   `json:"expiresAt"` // a confirm not decided by then is denied
}

func confirmJSON(c fetch.Confirm) ConfirmJSON {
	return ConfirmJSON{
		ID: c.ID, AppID: c.AppID, Host: c.Host, Method: c.Method, URL: c.URL, Slot: c.Slot, BodyPreview: c.Body,
		Probe: c.Probe, Delivery: string(c.Delivery), CreatedAt: Time{c.CreatedAt}, ExpiresAt: Time{c.ExpiresAt},
	}
}

// ConfirmsResponse is GET /v1/confirms: pending confirms, oldest first.
type ConfirmsResponse struct {
	Confirms []ConfirmJSON `json:"confirms"`
}

// ConfirmResponse is GET /v1/confirms/{id}.
type ConfirmResponse struct {
	Confirm ConfirmJSON `json:"confirm"`
}

// DecisionRequest is POST /v1/confirms/{id}.
type DecisionRequest struct {
	Decision string `json:"decision"`           // allow | deny
	Remember string `json:"remember,omitempty"` // once (default) | session; an allow only
}

// QuietHoursJSON are a standing approval's quiet hours: "HH:MM" local
// times in an IANA time zone ("" is UTC). Start after End spans midnight.
type QuietHoursJSON struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	TimeZone string `json:"timeZone,omitempty"`
}

// StandingRequest is POST /v1/standing: arm a standing approval. The
// host attests with userGesture that the user armed it with an explicit
// gesture on its own surface; false is refused.
type StandingRequest struct {
	AppID         string          `json:"appId"`
	Slot          string          `json:"slot"`
	Target        string          `json:"target"`
	Trigger       string          `json:"trigger"`
	MaxSends      int             `json:"maxSends"`
	WindowSeconds int64           `json:"windowSeconds"`
	QuietHours    *QuietHoursJSON `json:"quietHours,omitempty"`
	UserGesture   bool            `json:"userGesture"`
}

// StandingJSON is an armed standing approval, disclosed wherever its
// connection is.
type StandingJSON struct {
	ID            string          `json:"id"`
	AppID         string          `json:"appId"`
	Slot          string          `json:"slot"`
	Target        string          `json:"target"`
	Trigger       string          `json:"trigger"`
	MaxSends      int             `json:"maxSends"`
	WindowSeconds int64           `json:"windowSeconds"`
	QuietHours    *QuietHoursJSON `json:"quietHours,omitempty"`
	ArmedAt       Time            `json:"armedAt"`
	SendsInWindow int             `json:"sendsInWindow"`
}

func standingJSON(st fetch.Standing) StandingJSON {
	j := StandingJSON{
		ID: st.ID, AppID: st.Spec.AppID, Slot: st.Spec.Slot, Target: st.Spec.Target, Trigger: st.Spec.Trigger,
		MaxSends: st.Spec.MaxSends, WindowSeconds: int64(st.Spec.Window / time.Second), ArmedAt: Time{st.ArmedAt},
		SendsInWindow: st.SendsInWindow,
	}
	if q := st.Spec.Quiet; q != nil {
		j.QuietHours = &QuietHoursJSON{Start: clockString(q.Start), End: clockString(q.End)}
		// The zone used, always: an IANA name, or "Local" for the
		// machine's local time (no timeZone was given).
		j.QuietHours.TimeZone = "Local"
		if q.Location != nil {
			j.QuietHours.TimeZone = q.Location.String()
		}
	}
	return j
}

// clockString writes a duration since midnight as "HH:MM".
func clockString(d time.Duration) string {
	m := int(d / time.Minute)
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// StandingsResponse is GET /v1/standing.
type StandingsResponse struct {
	Standing []StandingJSON `json:"standing"`
}

// StandingResponse answers POST /v1/standing.
type StandingResponse struct {
	Standing StandingJSON `json:"standing"`
}

// KillResponse answers POST /v1/standing/kill.
type KillResponse struct {
	Disarmed int `json:"disarmed"`
}

// OutcomeSentUnknown is the journal outcome of a request written before
// its send and never completed: it was sent (or about to be) when snugd
// stopped, and what the upstream answered is unknown. While the request
// is in flight its entry reads the same.
const OutcomeSentUnknown = "sent-unknown"

// JournalEntryJSON is one journal entry: metadata only, never a body, a
// header value or a credential.
type JournalEntryJSON struct {
	ID         int64  `json:"id"`
	At         Time   `json:"at"`
	AppID      string `json:"appId,omitempty"` // absent on a host act and an import's summary
	Slot       string `json:"slot,omitempty"`
	Host       string `json:"host,omitempty"`
	Method     string `json:"method,omitempty"`
	Outcome    string `json:"outcome"`
	Gate       string `json:"gate,omitempty"`
	Code       string `json:"code,omitempty"`
	Status     int    `json:"status,omitempty"`
	DurationMS int64  `json:"durationMs"`
	Unattended bool   `json:"unattended"`
	Note       string `json:"note,omitempty"`

	// ResolvedHost is where a connection-URL request (host
	// snug-connection://<slot>) went, for the administrator.
	ResolvedHost string `json:"resolvedHost,omitempty"`

	// Act names a person's act when outcome is "act" (approve, reapprove,
	// revoke, reconnect, credentials-set, confirm-allow, confirm-deny,
	// host-pair, host-unpair, import); note says who, and what (field
	// names, never a value). A host act has no appId (the field is
	// absent).
	Act string `json:"act,omitempty"`
	// Count is how many repeated refusals (same app, slot, host, gate and
	// code within a minute) the entry stands for; LastAt the latest of
	// them, absent while count is 1.
	Count  int   `json:"count"`
	LastAt *Time `json:"lastAt,omitempty"`
}

// JournalResponse is GET /v1/journal, newest first. Next is the before
// value of the next page, 0 when there is none.
type JournalResponse struct {
	Entries []JournalEntryJSON `json:"entries"`
	Next    int64              `json:"next"`
}

// FactJSON is one LLM-safe fact about a connection: no credential,
// no LAN address.
type FactJSON struct {
	Slot     string   `json:"slot"`
	Provider string   `json:"provider"`
	Kind     string   `json:"kind"`
	Status   string   `json:"status"`
	Scopes   string   `json:"scopes,omitempty"`
	Hosts    []string `json:"hosts"`
	Address  string   `json:"address"` // snug-connection://<slot>/
	LAN      bool     `json:"lan"`
	Label    string   `json:"label,omitempty"`
	Armed    bool     `json:"armed"`
}

// FactsResponse is GET /v1/apps/{appId}/facts.
type FactsResponse struct {
	Facts []FactJSON `json:"facts"`
}
