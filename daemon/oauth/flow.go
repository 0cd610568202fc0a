package oauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// FlowLifetime is how long an authorization flow stays live: the flow in
// auth:_flow:<id> expires after ten minutes.
const FlowLifetime = 10 * time.Minute

// StateKeySize is the size of the state-signing key the caller keeps in
// auth:_state_hmac: 32 random bytes, made on first use.
const StateKeySize = 32

// Errors Verify and FlowIDFromState return: fixed sentences, never derived
// from what the callback carried.
var (
	ErrBadState      = errors.New("the sign-in answer does not match a sign-in snugd started")
	ErrFlowExpired   = errors.New("the sign-in took longer than ten minutes; start it again")
	ErrFlowUsed      = errors.New("this sign-in answer was already used")
	ErrWrongCallback = errors.New("this sign-in answer was delivered for another host")
	ErrStateKey      = errors.New("the state-signing key is not 32 bytes")
)

// Surface is where the redirect lands.
type Surface string

const (
	// SurfaceDesktop: RFC 8252's loopback redirect to snugd's own
	// GET /oauth/callback on 127.0.0.1.
	SurfaceDesktop Surface = "desktop"
	// SurfaceWeb: the origin-callback posture; the host's own
	// https://<origin>/oauth/callback page hands code and state to snugd
	// through an authenticated route.
	SurfaceWeb Surface = "web"
)

// Flow is one in-flight authorization (auth:_flow:<ID>). The caller
// seals it like every secret — Verifier is one — and enforces single use
// in its store: it marks Used (or deletes the flow) in the same
// transaction that reads it for a callback, before the code is exchanged.
type Flow struct {
	ID     string
	AppID  string
	Slot   string
	HostID string // the paired host that started the flow
	// Verifier is the PKCE code verifier; empty when the row turned PKCE
	// off (never on a loopback redirect).
	Verifier    string
	RedirectURI string
	Surface     Surface
	// Origin is the web surface's https origin; empty on the desktop.
	Origin    string
	ExpiresAt time.Time
	Used      bool
}

// FlowParams are what NewFlow needs.
type FlowParams struct {
	AppID, Slot, HostID string
	Surface             Surface
	// Port is snugd's API port, for the desktop loopback redirect.
	Port int
	// Origin is the web surface's origin (the host's paired origin).
	Origin string
	// PKCE is the row's pkce (true unless it says false).
	PKCE bool
}

// NewFlow starts a flow: a random ID, a fresh verifier when PKCE is on,
// the redirect of its surface, and an expiry ten minutes after now. It
// returns ErrLoopbackWithoutPKCE for a desktop flow with PKCE off, and
// ErrRedirectURI for a bad port or origin.
func NewFlow(p FlowParams, now time.Time) (Flow, error) {
	f := Flow{
		ID:        base64.RawURLEncoding.EncodeToString(randomBytes(16)),
		AppID:     p.AppID,
		Slot:      p.Slot,
		HostID:    p.HostID,
		Surface:   p.Surface,
		ExpiresAt: now.Add(FlowLifetime).Truncate(time.Second),
	}
	var err error
	switch p.Surface {
	case SurfaceDesktop:
		if !p.PKCE {
			return Flow{}, ErrLoopbackWithoutPKCE
		}
		f.RedirectURI, err = DesktopRedirectURI(p.Port)
	case SurfaceWeb:
		f.Origin = p.Origin
		f.RedirectURI, err = WebRedirectURI(p.Origin)
	default:
		err = errors.New("the flow names no redirect surface")
	}
	if err != nil {
		return Flow{}, err
	}
	if p.PKCE {
		f.Verifier = NewVerifier()
	}
	return f, nil
}

// flowRecord is the sealed form of a Flow: versioned, so a later change
// of shape is read deliberately, never guessed.
type flowRecord struct {
	V           int     `json:"v"`
	ID          string  `json:"id"`
	AppID       string  `json:"appId"`
	Slot        string  `json:"slot"`
	HostID      string  `json:"hostId"`
	Verifier    string  `json:"verifier"`
	RedirectURI string  `json:"redirectUri"`
	Surface     Surface `json:"surface"`
	Origin      string  `json:"origin"`
	ExpiresAt   int64   `json:"expiresAt"`
	Used        bool    `json:"used"`
}

// MarshalBinary encodes f for the caller to seal as auth:_flow:<ID>.
func (f Flow) MarshalBinary() ([]byte, error) {
	return json.Marshal(flowRecord{
		V: 1, ID: f.ID, AppID: f.AppID, Slot: f.Slot, HostID: f.HostID, Verifier: f.Verifier,
		RedirectURI: f.RedirectURI, Surface: f.Surface, Origin: f.Origin,
		ExpiresAt: f.ExpiresAt.Unix(), Used: f.Used,
	})
}

// UnmarshalBinary decodes what MarshalBinary wrote: version 1, no unknown
// key, a known surface.
func (f *Flow) UnmarshalBinary(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r flowRecord
	if err := dec.Decode(&r); err != nil || dec.More() {
		return errors.New("decode flow: not a flow record")
	}
	if r.V != 1 || r.ID == "" || (r.Surface != SurfaceDesktop && r.Surface != SurfaceWeb) {
		return errors.New("decode flow: unknown version or surface")
	}
	*f = Flow{
		ID: r.ID, AppID: r.AppID, Slot: r.Slot, HostID: r.HostID, Verifier: r.Verifier,
		RedirectURI: r.RedirectURI, Surface: r.Surface, Origin: r.Origin,
		ExpiresAt: time.Unix(r.ExpiresAt, 0), Used: r.Used,
	}
	return nil
}

// String names the flow without its verifier, so a flow in a log line or
// an error message leaks nothing.
func (f Flow) String() string { return "oauth flow " + f.ID }

// GoString keeps %#v from printing the verifier.
func (f Flow) GoString() string { return f.String() }

// stateMAC is HMAC-SHA256 under key over everything the flow binds: ID,
// app, slot, host, surface, origin, redirect and expiry, each
// length-prefixed so no two different flows share an input.
func stateMAC(key []byte, f Flow) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("snugd oauth state v1"))
	for _, s := range []string{f.ID, f.AppID, f.Slot, f.HostID, string(f.Surface), f.Origin, f.RedirectURI} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		m.Write(n[:])
		m.Write([]byte(s))
	}
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(f.ExpiresAt.Unix()))
	m.Write(exp[:])
	return m.Sum(nil)
}

// State returns the state parameter of f: "<flow ID>.<MAC>", the
// MAC being HMAC-SHA256 under key (auth:_state_hmac) over the flow ID and
// what binds it, base64url. The flow ID rides in the state so a callback
// can find its flow; it grants nothing without the MAC.
func State(key []byte, f Flow) (string, error) {
	if len(key) != StateKeySize {
		return "", ErrStateKey
	}
	return f.ID + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, f)), nil
}

// FlowIDFromState returns the flow ID a state names, for the caller to
// load the flow; nothing is verified yet. It returns ErrBadState when the
// state has not the shape State writes.
func FlowIDFromState(state string) (string, error) {
	id, mac, ok := strings.Cut(state, ".")
	if !ok || len(id) != 22 || len(mac) != 43 || !isBase64URL(id) || !isBase64URL(mac) {
		return "", ErrBadState
	}
	return id, nil
}

// Callback says where a callback arrived: the desktop loopback route, or
// the web route from an authenticated host with its origin.
type Callback struct {
	Surface Surface
	HostID  string // web: the authenticated host
	Origin  string // web: that host's origin
}

// Verify checks a callback's state against the stored flow: the MAC in
// constant time, then single use, expiry (ten minutes), and the surface:
// a desktop flow only at the desktop callback, a web flow only from the
// host and origin it was started for. It returns ErrStateKey, ErrBadState,
// ErrFlowUsed, ErrFlowExpired or ErrWrongCallback.
//
// conformance: P3-C13-18, P3-C13-19
func Verify(key []byte, f Flow, state string, at Callback, now time.Time) error {
	if len(key) != StateKeySize {
		return ErrStateKey
	}
	id, mac, ok := strings.Cut(state, ".")
	// Strict: a state whose last character carries other padding bits is
	// not the one State wrote, even if it decodes to the same MAC.
	got, err := base64.RawURLEncoding.Strict().DecodeString(mac)
	if !ok || err != nil || id != f.ID {
		return ErrBadState
	}
	if !hmac.Equal(got, stateMAC(key, f)) {
		return ErrBadState
	}
	if f.Used {
		return ErrFlowUsed
	}
	if !now.Before(f.ExpiresAt) {
		return ErrFlowExpired
	}
	if at.Surface != f.Surface {
		return ErrWrongCallback
	}
	if f.Surface == SurfaceWeb && (at.HostID != f.HostID || at.Origin != f.Origin) {
		return ErrWrongCallback
	}
	return nil
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
