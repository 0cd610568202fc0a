package hostauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/internal/names"
)

// Surface is what kind of host a paired client is. Its values are declared
// once, as the store's (store.Surface), and named here.
type Surface string

const (
	// SurfaceWeb is a web page on an https origin; its token is accepted
	// only with that exact Origin.
	SurfaceWeb = Surface(store.SurfaceWeb)
	// SurfaceDesktop is a desktop app; its token is refused with any Origin.
	SurfaceDesktop = Surface(store.SurfaceDesktop)
)

// PairingState is where a pairing request stands. Its values are declared
// once, as the store's (store.PairingState), and named here.
type PairingState string

const (
	PairingPending  = PairingState(store.PairingPending)
	PairingApproved = PairingState(store.PairingApproved)
	PairingDenied   = PairingState(store.PairingDenied)
	PairingExpired  = PairingState(store.PairingExpired)
	PairingRedeemed = PairingState(store.PairingRedeemed)
)

// Pairing limits.
const (
	// PairingTTL is how long a pairing request waits for approval.
	PairingTTL = 10 * time.Minute
	// RedeemGrace is how long after PairingTTL an approved request can still
	// be redeemed, so an approval in the last seconds is not lost to a
	// host's polling interval.
	RedeemGrace = 2 * time.Minute
	// MaxPendingPairings bounds the pairing requests waiting at once, per
	// surface. Web and desktop requests are counted apart: any web page
	// may ask to pair (its own origin), and a page that fills the web
	// requests must not keep a desktop host, which no page can
	// impersonate, from pairing. Past it a web request is refused
	// RATE_LIMITED; a desktop request displaces the oldest waiting under
	// the most-requested name (see Pair).
	MaxPendingPairings = 16
	// MaxVerifierFailures is how many wrong verifiers a request survives;
	// the next one denies it.
	MaxVerifierFailures = 5
	// MaxHostNameChars bounds a host's display name.
	MaxHostNameChars = 80

	// pairingCodeChars is the length of a pairing code, drawn from
	// pairingAlphabet: 8 × 5 bits = 40 bits, typed by the administrator.
	pairingCodeChars = 8
	// pairingAlphabet is Crockford's base32: no I, L, O or U, and typing
	// O for 0 or I or L for 1 still matches (normalizeCode).
	pairingAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	// challengeChars is BASE64URL of a SHA-256 without padding.
	challengeChars = 43
	// maxTokenChars bounds what Authenticate hashes.
	maxTokenChars = 256
	// touchEvery throttles last_seen_at writes to one per host per period:
	// authentication does no SQL otherwise.
	touchEvery = 5 * time.Minute
	// pairingHistory is how long finished pairing requests are kept.
	pairingHistory = 24 * time.Hour
	// maxFinishedPairings bounds the finished requests (denied, expired,
	// displaced, redeemed) kept within pairingHistory, newest first: a
	// flood of requests displaces request after request, and without the
	// bound every one would stay a row for a day. An older one's redeem
	// answers PAIRING_NOT_FOUND instead of its state.
	maxFinishedPairings = 128
)

// TokenPrefix begins every host token, so a leaked one is recognisable to
// secret scanners.
const TokenPrefix = "snugh_"

// Host is a paired host as the ctl socket lists it. It never holds the
// token, nor its hash.
type Host struct {
	ID         string
	Name       string
	Surface    Surface
	Origin     string // the exact web origin the token is bound to; "" for desktop
	CreatedAt  time.Time
	LastSeenAt *time.Time
}

// PairRequest is what a host sends to ask for pairing.
type PairRequest struct {
	Name      string
	Surface   Surface
	Origin    string // web: the origin to bind the token to; desktop: ""
	Challenge string // BASE64URL(SHA256(verifier)), 43 characters
	// Invitation is an administrator's invitation (Invite), for a desktop
	// request only; the zero value for none.
	Invitation InvitationToken
}

// Pairing is a pairing request. It never holds the verifier (snugd never
// sees it before redemption) nor the token.
type Pairing struct {
	ID        string
	Code      string // what the administrator approves, "ABCD-EFGH"
	Name      string
	Surface   Surface
	Origin    string
	State     PairingState
	HostID    string // the host redemption created; "" before
	Invited   bool   // recorded with an invitation: approved by the administrator when recorded
	ExpiresAt time.Time
	CreatedAt time.Time
}

// HostToken is a host token, released once at redemption. It prints,
// logs and marshals as REDACTED; Reveal returns the value for the one
// response that carries it.
type HostToken struct{ v string }

const redacted = "REDACTED"

// Reveal returns the token; "" when there is none.
func (t HostToken) Reveal() string { return t.v }

func (HostToken) String() string               { return redacted }
func (HostToken) GoString() string             { return redacted }
func (HostToken) Format(f fmt.State, _ rune)   { io.WriteString(f, redacted) }
func (HostToken) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (HostToken) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// Redemption is the answer to a redeem: the request's state and, exactly
// once, when the state is approved, the token.
type Redemption struct {
	State PairingState
	Token HostToken
}

// Book is the pairing book: the pairing requests and the paired hosts,
// stored in snugd_pairings and snugd_hosts, with an in-memory index of the
// hosts, token hash → host, so Authenticate does no SQL. The index loads
// from the store on first use. Unpair holds mu for writing across its
// transaction and the index update, so once it returns (and while it runs)
// no request authenticates with the unpaired host's token. A Book's
// methods are safe for concurrent use.
type Book struct {
	store *store.Store
	now   func() time.Time
	log   *slog.Logger

	mu       sync.RWMutex
	loaded   bool
	byHash   map[[sha256.Size]byte]*hostEntry
	origins  map[string]int // paired web origins → how many hosts hold each
	failures map[string]int // pairing id → wrong verifiers so far

	hooks Hooks // hooks.go
}

// New returns the pairing book over st, reading the time from now (nil
// means time.Now) and logging to log (nil discards). It reads nothing
// until first used.
func New(st *store.Store, now func() time.Time, log *slog.Logger) *Book {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Book{store: st, now: now, log: log}
}

type hostEntry struct {
	host    Host // LastSeenAt as loaded; seen is fresher
	hash    [sha256.Size]byte
	seen    atomic.Int64 // unix nanoseconds of the last authentication; 0 when none since load
	touched atomic.Int64 // unix nanoseconds of the last persisted last_seen_at

	// calls are the cancel functions of the host's requests in flight
	// (Bind); remove cancels them. Guarded by callsMu.
	callsMu  sync.Mutex
	calls    map[uint64]context.CancelFunc
	nextCall uint64
}

func newHostEntry(h store.Host) *hostEntry {
	e := &hostEntry{host: hostFromRow(h)}
	copy(e.hash[:], h.TokenHash)
	if h.LastSeenAt != nil {
		e.touched.Store(h.LastSeenAt.UnixNano())
	}
	return e
}

func hostFromRow(h store.Host) Host {
	return Host{ID: h.ID, Name: h.Name, Surface: Surface(h.Surface), Origin: h.Origin, CreatedAt: h.CreatedAt, LastSeenAt: h.LastSeenAt}
}

// add indexes e; b.mu is held for writing.
func (b *Book) add(e *hostEntry) {
	b.byHash[e.hash] = e
	if e.host.Surface == SurfaceWeb {
		b.origins[e.host.Origin]++
	}
}

// remove drops the host with id and cancels its requests in flight (their
// contexts are cancelled when remove returns); b.mu is held for writing.
func (b *Book) remove(id string) {
	for k, e := range b.byHash {
		if e.host.ID != id {
			continue
		}
		delete(b.byHash, k)
		e.callsMu.Lock()
		for _, cancel := range e.calls {
			cancel()
		}
		e.calls = nil
		e.callsMu.Unlock()
		if e.host.Surface == SurfaceWeb {
			if b.origins[e.host.Origin]--; b.origins[e.host.Origin] <= 0 {
				delete(b.origins, e.host.Origin)
			}
		}
	}
}

// lock takes the book for writing, loading it first when needed. The
// caller unlocks b.mu.
func (b *Book) lock(ctx context.Context) error {
	b.mu.Lock()
	if b.loaded {
		return nil
	}
	rows, err := store.Read(ctx, b.store, (*store.Tx).Hosts)
	if err != nil {
		b.mu.Unlock()
		return b.internal("load hosts", err)
	}
	b.byHash = make(map[[sha256.Size]byte]*hostEntry, len(rows))
	b.origins = map[string]int{}
	b.failures = map[string]int{}
	for _, h := range rows {
		if len(h.TokenHash) != sha256.Size {
			b.log.Warn("paired host with a malformed token hash ignored", "host_id", h.ID)
			continue
		}
		b.add(newHostEntry(h))
	}
	b.loaded = true
	return nil
}

// rlock takes the book for reading, loading it first when needed. The
// caller read-unlocks b.mu.
func (b *Book) rlock(ctx context.Context) error {
	b.mu.RLock()
	if b.loaded {
		return nil
	}
	b.mu.RUnlock()
	if err := b.lock(ctx); err != nil {
		return err
	}
	b.mu.Unlock()
	b.mu.RLock() // loaded never goes back to false
	return nil
}

// Authenticate returns the paired host whose token is token, checking
// the token's origin binding against origin, the request's Origin header
// ("" when it carries none): a web host's token is accepted only with its
// exact origin, a desktop host's only without any. It is on every
// authenticated request, so it does no SQL (an in-memory index; last_seen_at
// is written at most once per host every five minutes).
//
// The index is keyed by the token's SHA-256: a lookup's timing can depend
// on the hash, which tells an attacker nothing about any token, since
// SHA-256 of a 256-bit random value cannot be inverted. The hash found is
// still compared in constant time.
//
// Errors: UNAUTHORIZED for no or an unknown token, FORBIDDEN for a token
// used from the wrong origin. Safe for concurrent use.
func (b *Book) Authenticate(ctx context.Context, token, origin string) (Host, error) {
	if token == "" {
		return Host{}, errcode.New(errcode.Unauthorized, "no host token")
	}
	if len(token) > maxTokenChars {
		return Host{}, errcode.New(errcode.Unauthorized, "unknown host token")
	}
	sum := sha256.Sum256([]byte(token))
	if err := b.rlock(ctx); err != nil {
		return Host{}, err
	}
	e := b.byHash[sum]
	b.mu.RUnlock()
	if e == nil || subtle.ConstantTimeCompare(e.hash[:], sum[:]) != 1 {
		return Host{}, errcode.New(errcode.Unauthorized, "unknown host token")
	}
	switch e.host.Surface {
	case SurfaceWeb:
		if origin != e.host.Origin {
			return Host{}, errcode.New(errcode.Forbidden, "this host token is bound to another origin")
		}
	default:
		if origin != "" {
			return Host{}, errcode.New(errcode.Forbidden, "a desktop host's token is refused from a web page")
		}
	}
	now := b.now()
	e.seen.Store(now.UnixNano())
	b.touch(ctx, e, now)
	h := e.host
	h.LastSeenAt = &now
	return h, nil
}

// Bind returns a copy of ctx that is also cancelled the moment host id
// is unpaired, and the function that releases it when the request ends.
// Unpair cancels every bound context before it returns, so what an
// unpaired host already has running stops with its token: its event
// stream ends, a call it parked on a confirm is denied, and a fetch not
// yet sent is not sent. A host unpaired between Authenticate and
// Bind is UNAUTHORIZED, like its token. Safe for concurrent use.
func (b *Book) Bind(ctx context.Context, id string) (context.Context, context.CancelFunc, error) {
	if err := b.rlock(ctx); err != nil {
		return nil, nil, err
	}
	defer b.mu.RUnlock()
	var e *hostEntry
	for _, x := range b.byHash {
		if x.host.ID == id {
			e = x
			break
		}
	}
	if e == nil {
		return nil, nil, errcode.New(errcode.Unauthorized, "unknown host token")
	}
	// e is in the book and the book is read-locked, so remove has not
	// run on it: the cancel registered here is one remove will call.
	ctx, cancel := context.WithCancel(ctx)
	e.callsMu.Lock()
	defer e.callsMu.Unlock()
	if e.calls == nil {
		e.calls = map[uint64]context.CancelFunc{}
	}
	e.nextCall++
	n := e.nextCall
	e.calls[n] = cancel
	return ctx, func() {
		cancel()
		e.callsMu.Lock()
		delete(e.calls, n)
		e.callsMu.Unlock()
	}, nil
}

// touchHost persists last_seen_at when the last write is older than
// touchEvery. A failure is logged: it is bookkeeping, never a reason to
// refuse a request.
func (b *Book) touch(ctx context.Context, e *hostEntry, now time.Time) {
	last := e.touched.Load()
	if now.UnixNano()-last < int64(touchEvery) || !e.touched.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	err := b.store.Update(ctx, func(tx *store.Tx) error { return tx.TouchHost(e.host.ID) })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		b.log.Warn("record host last seen", "host_id", e.host.ID, "err", err)
	}
}

// PairedOrigin reports whether a paired web host is bound to origin: the
// only origins whose CORS preflights the API answers.
func (b *Book) PairedOrigin(ctx context.Context, origin string) bool {
	if origin == "" || b.rlock(ctx) != nil {
		return false
	}
	defer b.mu.RUnlock()
	return b.origins[origin] > 0
}

// PairingOrigin returns the origin of web pairing request id, for the
// redeem route's CORS preflight and origin admission; ok is false for an
// unknown id and for a desktop request. Whether the request can still be
// redeemed is Redeem's to say.
func (b *Book) PairingOrigin(ctx context.Context, id string) (origin string, ok bool) {
	if !validPairingID(id) {
		return "", false
	}
	p, err := store.Read(ctx, b.store, func(tx *store.Tx) (store.Pairing, error) { return tx.Pairing(id) })
	if err != nil || Surface(p.Surface) != SurfaceWeb {
		return "", false
	}
	return p.Origin, true
}

// pair records a pairing request and returns it with its code, pending for
// PairingTTL. requestOrigin is the request's Origin header ("" when none):
// a web request from a browser may pair only its own origin, and a desktop
// request carries none.
//
// A desktop request that carries an invitation (Invite) is recorded
// approved instead, with Invited set, when the invitation is live and
// bound to the request's name (in any case), and the invitation is used
// up in the same transaction: such a request waits for no code, takes no
// place among the waiting requests and is never displaced.
//
// Errors: BAD_REQUEST for a malformed request (an invitation on a web
// request included), FORBIDDEN for an Origin that is not the one being
// paired, RATE_LIMITED when MaxPendingPairings web requests are already
// waiting, INVITATION_INVALID for an invitation snugd does not hold for
// the name (one answer, whether it is wrong, expired or used),
// STORAGE_FULL when the disk holding the store cannot take the write
// (as for every write of the book). A desktop request is never refused
// for a full table: it displaces the oldest pending desktop request of
// the name that holds the most (a flood under one name displaces its
// own).
func (b *Book) pair(ctx context.Context, req PairRequest, requestOrigin string) (Pairing, error) {
	if err := checkHostName(req.Name); err != nil {
		return Pairing{}, err
	}
	if req.Invitation.Reveal() != "" && req.Surface != SurfaceDesktop {
		return Pairing{}, errcode.New(errcode.BadRequest, "an invitation pairs a desktop host only: a web host pairs from its page, and the administrator approves its code")
	}
	switch req.Surface {
	case SurfaceWeb:
		if !ValidWebOrigin(req.Origin) {
			return Pairing{}, errcode.New(errcode.BadRequest, "a web host's origin must be a serialized https origin (or http://localhost, http://127.0.0.1 or http://[::1], for development)")
		}
		if requestOrigin != "" && requestOrigin != req.Origin {
			return Pairing{}, errcode.New(errcode.Forbidden, "a page may pair only its own origin")
		}
	case SurfaceDesktop:
		if req.Origin != "" {
			return Pairing{}, errcode.New(errcode.BadRequest, "a desktop host has no origin")
		}
		if requestOrigin != "" {
			return Pairing{}, errcode.New(errcode.Forbidden, "a desktop host does not pair from a web page")
		}
	default:
		return Pairing{}, errcode.New(errcode.BadRequest, "surface must be web or desktop")
	}
	if !validChallenge(req.Challenge) {
		return Pairing{}, errcode.New(errcode.BadRequest, "challenge must be BASE64URL(SHA256(verifier)): 43 characters, no padding")
	}
	if req.Invitation.Reveal() != "" {
		return b.pairInvited(ctx, req)
	}
	var p store.Pairing
	err := b.store.Update(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		if _, err := tx.ExpirePairings(); err != nil {
			return err
		}
		if err := prune(tx, now); err != nil {
			return err
		}
		pending, err := tx.PendingPairings(store.Surface(req.Surface))
		if err != nil {
			return err
		}
		if len(pending) >= MaxPendingPairings {
			if req.Surface != SurfaceDesktop {
				return errcode.New(errcode.RateLimited, "too many pairing requests are waiting; approve or deny some, or wait for them to expire")
			}
			// Desktop requests all come from 127.0.0.1 without an Origin:
			// refusing the new one would let one local process that filled
			// the table lock every desktop host out. The new request takes
			// the place of the oldest waiting under the name that holds
			// the most, so a flood under one name displaces only its own.
			ev := evictee(pending)
			if err := tx.SetPairingState(ev.ID, store.PairingPending, store.PairingExpired, ""); err != nil {
				return err
			}
			b.log.Warn("pairing request displaced: too many desktop requests waiting", "pairing_id", ev.ID)
		}
		code, err := freeCode(tx)
		if err != nil {
			return err
		}
		p, err = tx.InsertPairing(store.Pairing{
			ID:        "p_" + randomHex(16),
			Code:      code,
			Challenge: req.Challenge,
			Name:      req.Name,
			Surface:   store.Surface(req.Surface),
			Origin:    req.Origin,
			State:     store.PairingPending,
			ExpiresAt: now.Add(PairingTTL),
		})
		return err
	})
	if err != nil {
		return Pairing{}, b.passCoded("record pairing", err)
	}
	b.log.Info("pairing requested", "pairing_id", p.ID, "surface", string(p.Surface), "origin", p.Origin)
	return pairingFromRow(p), nil
}

// prune drops the finished requests older than pairingHistory and those
// past the newest maxFinishedPairings, on every write that records a
// request, so the table holds at most that many besides the pending and
// approved ones (which MaxPendingPairings and the administrator bound).
func prune(tx *store.Tx, now time.Time) error {
	if _, err := tx.DeletePairingsBefore(now.Add(-pairingHistory)); err != nil {
		return err
	}
	_, err := tx.PrunePairings(maxFinishedPairings)
	return err
}

// evictee is the pending request a new desktop request displaces: the
// oldest of the name (in any case) with the most pending requests.
func evictee(pending []store.Pairing) store.Pairing {
	count := map[string]int{}
	for _, p := range pending {
		count[strings.ToLower(p.Name)]++
	}
	best := pending[0]
	for _, p := range pending[1:] {
		n, bn := count[strings.ToLower(p.Name)], count[strings.ToLower(best.Name)]
		if n > bn || n == bn && p.CreatedAt.Before(best.CreatedAt) {
			best = p
		}
	}
	return best
}

// freeCode draws a code no pending request uses.
func freeCode(tx *store.Tx) (string, error) {
	for range 8 {
		code := newCode()
		_, err := tx.PendingPairingByCode(code)
		if errors.Is(err, store.ErrNotFound) {
			return code, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", errors.New("no free pairing code after 8 draws")
}

// Redeem redeems pairing request id with the verifier whose hash is
// its challenge (compared in constant time). requestOrigin is bound as in
// Pair. While the request is pending it answers pending; once approved it
// creates the host and answers approved with the token: exactly once,
// since the request is then redeemed. Denied and expired requests answer
// their state. After MaxVerifierFailures wrong verifiers the request is
// denied.
//
// Errors: PAIRING_NOT_FOUND, BAD_REQUEST for a malformed verifier,
// FORBIDDEN for a wrong Origin, VERIFIER_MISMATCH, PAIRING_REDEEMED for a
// second redemption.
func (b *Book) Redeem(ctx context.Context, id, verifier, requestOrigin string) (Redemption, error) {
	if !validPairingID(id) {
		return Redemption{}, errcode.New(errcode.PairingNotFound, "no such pairing request")
	}
	if !validVerifier(verifier) {
		return Redemption{}, errcode.New(errcode.BadRequest, "verifier must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_' and '~'")
	}
	if err := b.rlock(ctx); err != nil { // load the book before the first host is added
		return Redemption{}, err
	}
	b.mu.RUnlock()
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	var (
		out      Redemption
		host     *store.Host
		mismatch bool
		state    store.PairingState
	)
	err := b.store.Update(ctx, func(tx *store.Tx) error {
		p, err := tx.Pairing(id)
		if errors.Is(err, store.ErrNotFound) {
			return errcode.New(errcode.PairingNotFound, "no such pairing request")
		}
		if err != nil {
			return err
		}
		if Surface(p.Surface) == SurfaceWeb && requestOrigin != "" && requestOrigin != p.Origin {
			return errcode.New(errcode.Forbidden, "the pairing belongs to another origin")
		}
		if Surface(p.Surface) == SurfaceDesktop && requestOrigin != "" {
			return errcode.New(errcode.Forbidden, "a desktop pairing is not redeemed from a web page")
		}
		if subtle.ConstantTimeCompare([]byte(challenge), []byte(p.Challenge)) != 1 {
			mismatch, state = true, p.State
			return errcode.New(errcode.VerifierMismatch, "the verifier does not match the pairing's challenge")
		}
		now := tx.Now()
		switch p.State {
		case store.PairingPending:
			if now.Before(p.ExpiresAt) {
				out.State = PairingPending
				return nil
			}
			out.State = PairingExpired
			return tx.SetPairingState(id, store.PairingPending, store.PairingExpired, "")
		case store.PairingApproved:
			if !now.Before(p.ExpiresAt.Add(RedeemGrace)) {
				out.State = PairingExpired
				return tx.SetPairingState(id, store.PairingApproved, store.PairingExpired, "")
			}
			token := TokenPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(32))
			hash := sha256.Sum256([]byte(token))
			h, err := tx.InsertHost(store.Host{ID: "h_" + randomHex(16), Name: p.Name, Surface: p.Surface, Origin: p.Origin, TokenHash: hash[:]})
			if err != nil {
				return err
			}
			if err := tx.SetPairingState(id, store.PairingApproved, store.PairingRedeemed, h.ID); err != nil {
				return err
			}
			host, out = &h, Redemption{State: PairingApproved, Token: HostToken{token}}
			return nil
		case store.PairingRedeemed:
			return errcode.New(errcode.PairingRedeemed, "the token was already released; pair again")
		default:
			out.State = PairingState(p.State)
			return nil
		}
	})
	if mismatch {
		b.verifierFailed(ctx, id, state)
	}
	if err != nil {
		return Redemption{}, b.passCoded("redeem pairing", err)
	}
	if host != nil {
		if err := b.indexRedeemed(ctx, *host, id); err != nil {
			return Redemption{}, err
		}
		b.log.Info("host paired", "host_id", host.ID, "surface", string(host.Surface), "origin", host.Origin)
	}
	return out, nil
}

// indexRedeemed adds the host a redemption created to the book, unless it
// was unpaired since the redemption committed: the administrator may list
// and unpair it in that moment, and Unpair, which holds the book for
// writing across its own transaction, finds nothing in the book to remove
// then. The check and the add happen under the same write lock.
func (b *Book) indexRedeemed(ctx context.Context, h store.Host, pairingID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, pairingID)
	// The token is already minted: a caller that went away must not
	// leave its host out of the book.
	_, err := store.Read(context.WithoutCancel(ctx), b.store, func(tx *store.Tx) (store.Host, error) { return tx.Host(h.ID) })
	if errors.Is(err, store.ErrNotFound) {
		return nil // unpaired already: the token never authenticates
	}
	if err != nil {
		return b.internal("index host", err)
	}
	b.add(newHostEntry(h))
	return nil
}

// verifierFailed counts a wrong verifier for pairing id and denies the
// request at MaxVerifierFailures.
func (b *Book) verifierFailed(ctx context.Context, id string, state store.PairingState) {
	b.mu.Lock()
	b.failures[id]++
	n := b.failures[id]
	if n >= MaxVerifierFailures {
		delete(b.failures, id)
	}
	b.mu.Unlock()
	b.log.Warn("pairing redeemed with a wrong verifier", "pairing_id", id, "failures", n)
	if n < MaxVerifierFailures || (state != store.PairingPending && state != store.PairingApproved) {
		return
	}
	err := b.store.Update(ctx, func(tx *store.Tx) error { return tx.SetPairingState(id, state, store.PairingDenied, "") })
	if err != nil && !errors.Is(err, store.ErrConflict) {
		b.log.Warn("deny pairing after wrong verifiers", "pairing_id", id, "err", err)
	}
}

// approve approves the pending pairing request with code (ctl
// socket only: the API never serves it over TCP) and returns it, so the
// administrator sees the name and origin approved. Errors: BAD_REQUEST for
// a malformed code, PAIRING_NOT_FOUND when no unexpired request waits
// under it.
func (b *Book) approve(ctx context.Context, code string) (Pairing, error) {
	return b.decide(ctx, code, store.PairingApproved)
}

// Deny denies the pending pairing request with code, as Approve approves
// it.
func (b *Book) Deny(ctx context.Context, code string) (Pairing, error) {
	return b.decide(ctx, code, store.PairingDenied)
}

func (b *Book) decide(ctx context.Context, code string, to store.PairingState) (Pairing, error) {
	c, ok := normalizeCode(code)
	if !ok {
		return Pairing{}, errcode.New(errcode.BadRequest, fmt.Sprintf("a pairing code is %d characters of %s", pairingCodeChars, pairingAlphabet))
	}
	var p store.Pairing
	err := b.store.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExpirePairings(); err != nil {
			return err
		}
		var err error
		p, err = tx.PendingPairingByCode(c)
		if errors.Is(err, store.ErrNotFound) {
			return errcode.New(errcode.PairingNotFound, "no pending pairing request has that code (it may have expired)")
		}
		if err != nil {
			return err
		}
		if err := tx.SetPairingState(p.ID, store.PairingPending, to, ""); err != nil {
			return err
		}
		p.State = to
		return nil
	})
	if err != nil {
		return Pairing{}, b.passCoded("decide pairing", err)
	}
	b.log.Info("pairing decided", "pairing_id", p.ID, "state", string(p.State), "origin", p.Origin)
	return pairingFromRow(p), nil
}

// Pending lists the pairing requests waiting for approval, newest first.
// It reads only those, through an index.
func (b *Book) Pending(ctx context.Context) ([]Pairing, error) {
	now := b.now()
	rows, err := store.Read(ctx, b.store, func(tx *store.Tx) ([]store.Pairing, error) { return tx.LivePairings(now) })
	if err != nil {
		return nil, b.internal("list pairings", err)
	}
	out := make([]Pairing, 0, len(rows))
	for _, p := range rows {
		out = append(out, pairingFromRow(p))
	}
	return out, nil
}

// PendingCount counts the pairing requests waiting for approval, as
// Pending lists them, from an index alone: what a status read shows.
func (b *Book) PendingCount(ctx context.Context) (int, error) {
	now := b.now()
	n, err := store.Read(ctx, b.store, func(tx *store.Tx) (int, error) { return tx.CountLivePairings(now) })
	if err != nil {
		return 0, b.internal("count pairings", err)
	}
	return n, nil
}

// Hosts lists the paired hosts, oldest first.
func (b *Book) Hosts(ctx context.Context) ([]Host, error) {
	rows, err := store.Read(ctx, b.store, (*store.Tx).Hosts)
	if err != nil {
		return nil, b.internal("list hosts", err)
	}
	seen := map[string]int64{}
	if b.rlock(ctx) == nil {
		for _, e := range b.byHash {
			seen[e.host.ID] = e.seen.Load()
		}
		b.mu.RUnlock()
	}
	out := make([]Host, len(rows))
	for i, r := range rows {
		out[i] = hostFromRow(r)
		if ns := seen[r.ID]; ns != 0 && (r.LastSeenAt == nil || ns > r.LastSeenAt.UnixNano()) {
			t := time.Unix(0, ns).UTC()
			out[i].LastSeenAt = &t
		}
	}
	return out, nil
}

// unpair unpairs host id at once and returns the host it was: its token
// stops authenticating, and every context Bind gave its requests is
// cancelled, before Unpair returns. Errors: HOST_NOT_FOUND.
// beforeCancel, when not nil, runs once the host is deleted and before its
// requests are cancelled, with the book still locked, so that no request of
// the host can start or decide anything in between (the daemon withdraws
// the host's parked confirms there).
func (b *Book) unpair(ctx context.Context, id string, beforeCancel func()) (Host, error) {
	if err := b.lock(ctx); err != nil {
		return Host{}, err
	}
	defer b.mu.Unlock()
	var row store.Host
	err := b.store.Update(ctx, func(tx *store.Tx) error {
		var err error
		if row, err = tx.Host(id); err != nil {
			return err
		}
		return tx.DeleteHost(id)
	})
	if errors.Is(err, store.ErrNotFound) {
		return Host{}, errcode.New(errcode.HostNotFound, "no paired host has that id")
	}
	if err != nil {
		return Host{}, b.internal("delete host", err)
	}
	if beforeCancel != nil {
		beforeCancel() // the host is gone from the store and authenticates nothing any more
	}
	b.remove(id)
	b.log.Info("host unpaired", "host_id", id)
	return hostFromRow(row), nil
}

// passCoded passes coded errors through and turns the rest into INTERNAL.
func (b *Book) passCoded(op string, err error) error {
	if _, ok := errcode.CodeOf(err); ok {
		return err
	}
	return b.internal(op, err)
}

// internal logs err, the one place a failure of the book is logged, and
// returns an INTERNAL error that names op only; or STORAGE_FULL, with a
// fixed sentence, when the store could not write for a full or read-only
// disk (the transaction changed nothing).
func (b *Book) internal(op string, err error) error {
	b.log.Error(op, "err", err)
	if errors.Is(err, store.ErrStorageFull) {
		return errcode.Wrap(errcode.StorageFull, "the disk holding snugd's data is full; nothing was changed", err)
	}
	return errcode.Wrap(errcode.Internal, op+" failed", err)
}

func pairingFromRow(p store.Pairing) Pairing {
	return Pairing{
		ID: p.ID, Code: displayCode(p.Code), Name: p.Name, Surface: Surface(p.Surface), Origin: p.Origin,
		State: PairingState(p.State), HostID: p.HostID, Invited: p.Invited, ExpiresAt: p.ExpiresAt, CreatedAt: p.CreatedAt,
	}
}

// ValidWebOrigin reports whether origin is an origin a web host can be
// bound to, spelled exactly as a browser serializes it in the Origin
// header: https://host[:port] with a lowercase DNS host name and no default
// port, path, query or trailing slash. For development, http://localhost,
// http://127.0.0.1 and http://[::1] (any port) are accepted too: such a
// page is served by a process on this machine, already inside the user's
// trust boundary, and the administrator still approves it by name. An IP
// literal is refused under https.
func ValidWebOrigin(origin string) bool {
	if len(origin) > 300 {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || u.Path != "" || u.RawPath != "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return false
	}
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") { // an empty port
		return false
	}
	switch u.Scheme {
	case "https":
		if !validDNSName(host) {
			return false
		}
	case "http":
		if host != "localhost" && host != "127.0.0.1" && host != "::1" {
			return false
		}
	default:
		return false
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port ||
			u.Scheme == "https" && n == 443 || u.Scheme == "http" && n == 80 {
			return false
		}
	}
	return u.Scheme+"://"+u.Host == origin
}

// validDNSName reports whether host is a lowercase LDH host name (no
// trailing dot, labels of 1–63 characters, a last label that is not all
// digits, so no numeric IP spelling passes).
func validDNSName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// checkHostName refuses a display name that is longer than
// MaxHostNameChars or breaks the text rule of names a person reads to
// decide trust (names.Check): empty, padded, not NFC, or holding a
// character that does not show itself (controls, format characters,
// invisible fillers, private-use or unassigned code points), any of which
// could disguise it on the administrator's screen. A name that passes but
// looks like another (fullwidth or mixed-script letters) is stored and
// flagged wherever it is shown.
func checkHostName(name string) error {
	msg := fmt.Sprintf("name must be 1 to %d characters of plain text", MaxHostNameChars)
	if utf8.RuneCountInString(name) > MaxHostNameChars {
		return errcode.New(errcode.BadRequest, msg)
	}
	if err := names.Check(name); err != nil {
		return errcode.New(errcode.BadRequest, msg+" ("+err.Error()+")")
	}
	return nil
}

// validChallenge reports whether c is BASE64URL (no padding, canonical) of
// 32 bytes.
func validChallenge(c string) bool {
	if len(c) != challengeChars {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// validVerifier reports whether v is an RFC 7636 code verifier: 43–128
// unreserved characters.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

func validPairingID(id string) bool {
	if len(id) != 2+32 || !strings.HasPrefix(id, "p_") {
		return false
	}
	_, err := hex.DecodeString(id[2:])
	return err == nil && strings.ToLower(id) == id
}

// newCode draws a pairing code: pairingCodeChars characters of
// pairingAlphabet, uniformly (32 symbols, 5 bits each).
func newCode() string {
	b := randomBytes(pairingCodeChars)
	for i := range b {
		b[i] = pairingAlphabet[b[i]&31]
	}
	return string(b)
}

// normalizeCode reads a code as typed: case, spaces and dashes do not
// matter, and O, I and L read as 0, 1 and 1 (Crockford).
func normalizeCode(s string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case ' ', '-':
			continue
		case 'O':
			r = '0'
		case 'I', 'L':
			r = '1'
		}
		if r > unicode.MaxASCII || !strings.ContainsRune(pairingAlphabet, r) {
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != pairingCodeChars {
		return "", false
	}
	return b.String(), true
}

// displayCode writes a stored code as the user reads it: "ABCD-EFGH".
func displayCode(c string) string {
	if len(c) != pairingCodeChars {
		return c
	}
	return c[:4] + "-" + c[4:]
}

// randomBytes returns n bytes from crypto/rand, which never fails (Go 1.24
// and later crash the program rather than return short randomness).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }
