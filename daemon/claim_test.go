package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/claim"
	"github.com/snug/snugd/daemon/claim/claimtest"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
)

// The claim tests run a SimpleFIN Bridge simulator (claimtest) on a
// loopback TLS listener whose certificate names bridge.simplefin.org. The
// public transport resolves every name to a documentation address, which
// its SSRF guard admits, through an injected resolver, and an
// injected dialer connects that address to the listener. No gate is
// touched: these are Public's test seams.

const (
	claimApp  = "budget-app"
	claimSlot = "bank"
	// claimDocAddr is what every name resolves to.
	claimDocAddr = "203.0.113.20"
)

// claimResolver answers every name with addrs (claimDocAddr by default)
// and records the names asked.
type claimResolver struct {
	mu    sync.Mutex
	addrs []netip.Addr
	asked []string
}

func (r *claimResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, strings.TrimSuffix(host, "."))
	if r.addrs != nil {
		return slices.Clone(r.addrs), nil
	}
	return []netip.Addr{netip.MustParseAddr(claimDocAddr)}, nil
}

func (r *claimResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

// claimDialer connects every checked address to the bridge's listener and
// records the dials; fail makes every dial fail.
type claimDialer struct {
	to    string
	mu    sync.Mutex
	dials []string
	fail  bool
}

func (d *claimDialer) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, address)
	fail := d.fail
	d.mu.Unlock()
	if fail {
		return nil, errors.New("connection refused")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.to)
}

func (d *claimDialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.dials)
}

// claimRig is a daemon, its bridge and the seams between them.
type claimRig struct {
	d        *Daemon
	bridge   *claimtest.Bridge
	resolver *claimResolver
	dialer   *claimDialer
	logs     *testutil.LogBuffer
	dir      string
}

func newClaimRig(t *testing.T, bridge *claimtest.Bridge, opts ...func(*Config)) *claimRig {
	t.Helper()
	if bridge == nil {
		bridge = &claimtest.Bridge{}
	}
	srv, roots := claimtest.NewTLSServer(t, bridge, "bridge.simplefin.org", "evil.example")
	r := &claimRig{bridge: bridge, resolver: &claimResolver{}, dialer: &claimDialer{to: srv.Listener.Addr().String()}, logs: &testutil.LogBuffer{}, dir: t.TempDir() + "/data"}
	cfg := Config{
		DataDir: r.dir,
		Logger:  slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:     func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		Public:  &transports.Public{Resolver: r.resolver, Dial: r.dialer.Dial, RootCAs: roots},
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run(t, d)
	t.Cleanup(func() { d.Close() })
	r.d = d
	return r
}

// simplefinRequirement is what an app declares for SimpleFIN; the borrow
// ban substitutes the registry's pinned values.
func simplefinRequirement(slot string) []byte {
	b, _ := json.Marshal(map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "SimpleFIN"},
		"kind":             "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{"bridge.simplefin.org"},
	})
	return b
}

// approveSimpleFIN declares and approves the SimpleFIN row.
func (r *claimRig) approveSimpleFIN(t *testing.T) {
	t.Helper()
	res, err := r.d.proposers.ProposeUser(t.Context(), claimApp, claimSlot, simplefinRequirement(claimSlot))
	if err != nil {
		t.Fatalf("ProposeUser: %v", err)
	}
	if !res.Borrowed {
		t.Fatalf("the SimpleFIN requirement did not borrow the registry's values: %+v", res)
	}
	if _, err := r.d.grants.Approve(t.Context(), claimApp, claimSlot); err != nil {
		t.Fatalf("Approve: %v", err)
	}
}

// stored returns the slot's credential slice, without the state.
func (r *claimRig) stored(t *testing.T) map[string]string {
	t.Helper()
	s, err := r.d.grants.SlotSecrets(t.Context(), claimApp, claimSlot)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range s {
		if k != store.ConnectionStateField {
			out[k] = string(v)
		}
	}
	return out
}

func (r *claimRig) state(t *testing.T) (grants.ConnState, bool) {
	t.Helper()
	st, ok, err := r.d.grants.ConnectionState(t.Context(), claimApp, claimSlot)
	if err != nil {
		t.Fatal(err)
	}
	return st, ok
}

// get runs an app's GET through the executor.
func (r *claimRig) get(t *testing.T, rawURL string) (fetch.NetResult, map[string]any) {
	t.Helper()
	res := r.d.exec.Net(t.Context(), fetch.NetCall{AppID: claimApp, Frame: frame("GET", rawURL, nil), Delivery: fetch.DeliveryApp})
	var resp map[string]any
	if err := json.Unmarshal(res.Frame, &resp); err != nil {
		t.Fatalf("net answer %s: %v", res.Frame, err)
	}
	return res, resp
}

func reasonOf(t *testing.T, err error) claim.Reason {
	t.Helper()
	var ce *pairing.ClaimRefusedError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *ClaimRefusedError", err, err)
	}
	if code, _ := errcode.CodeOf(err); code != errcode.ClaimRefused {
		t.Errorf("code = %q, want CLAIM_REFUSED", code)
	}
	return ce.Reason
}

// TestClaimSimpleFIN is the whole ceremony: paste, verify, claim once,
// commit the credentials with the marker, then read accounts through the
// ordinary executor with the basic_auth template.
// conformance: P3-C12.12-18, P3-C12.12-22
func TestClaimSimpleFIN(t *testing.T) {
	r := newClaimRig(t, nil)
	r.approveSimpleFIN(t)
	token := r.bridge.NewSetupToken()
	// The clipboard's spelling: URL-safe alphabet is equivalent, and
	// surrounding whitespace is trimmed.
	c, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, "\n "+token+" \r\n", false)
	if err != nil {
		t.Fatalf("ClaimSetupToken = %v", err)
	}
	if c.Status != grants.StatusApproved {
		t.Errorf("row status = %s, want approved", c.Status)
	}
	reqs := r.bridge.Requests()
	if len(reqs) != 2 || reqs[0].Method != "GET" || reqs[0].Path != "/simplefin/info" || reqs[1].Method != "POST" || !strings.HasPrefix(reqs[1].Path, "/simplefin/claim/") {
		t.Fatalf("bridge saw %+v; want the /info probe, then one claim POST", reqs)
	}
	// One lookup serves the probe and the claim: a rebinding answer has no
	// second lookup to slip into.
	if got := r.resolver.lookups(); len(got) != 1 || got[0] != "bridge.simplefin.org" {
		t.Errorf("lookups = %v; want bridge.simplefin.org once", got)
	}
	if reqs[1].Body != "" || reqs[1].User != "" {
		t.Errorf("the claim POST carried a body %q or credentials %q", reqs[1].Body, reqs[1].User)
	}
	creds := r.bridge.Credentials()
	if got := r.stored(t); len(creds) != 1 || !maps1(got, "access_credentials", creds[0]) {
		t.Fatalf("stored %d values; want access_credentials = the bridge's user:pass", len(got))
	}
	st, ok := r.state(t)
	if !ok || st.Status != grants.ConnConnected || st.ClaimVerifiedAt == nil || *st.ClaimVerifiedAt != time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixMilli() || st.LastError != "" {
		t.Errorf("state = %+v; want connected with claimVerifiedAt", st)
	}
	if fam, owed := r.d.grants.PairingOwed(c.Requirement, st, ok); fam != "token-claim" || owed {
		t.Errorf("pairingOwed = %s, %v; want token-claim, not owed", fam, owed)
	}

	user, _, _ := strings.Cut(creds[0], ":")
	t.Run("accounts with transactions", func(t *testing.T) {
		res, resp := r.get(t, fmt.Sprintf("https://bridge.simplefin.org/simplefin/accounts?start-date=%d&end-date=%d&pending=1&account=ACT-checking", claimtest.Nov01, claimtest.Nov29))
		if res.Status != 200 {
			t.Fatalf("accounts = %s", res.Frame)
		}
		last := r.bridge.Requests()[len(r.bridge.Requests())-1]
		if last.User != user || last.RawQuery != fmt.Sprintf("start-date=%d&end-date=%d&pending=1&account=ACT-checking", claimtest.Nov01, claimtest.Nov29) {
			t.Errorf("bridge saw user %q query %q", last.User, last.RawQuery)
		}
		var set claimtest.AccountSet
		if err := json.Unmarshal([]byte(resp["body"].(string)), &set); err != nil {
			t.Fatal(err)
		}
		if len(set.Accounts) != 1 || set.Accounts[0].ID != "ACT-checking" || len(set.Accounts[0].Transactions) != 3 {
			t.Errorf("accounts = %+v; want checking with two posted and one pending transaction", set.Accounts)
		}
		if strings.Contains(string(res.Frame), creds[0]) {
			t.Error("the answer carries the credentials")
		}
	})
	t.Run("balances only, by connection URL", func(t *testing.T) {
		res, resp := r.get(t, "snug-connection://bank/simplefin/accounts?balances-only=1")
		if res.Status != 200 {
			t.Fatalf("accounts = %s", res.Frame)
		}
		var set claimtest.AccountSet
		json.Unmarshal([]byte(resp["body"].(string)), &set)
		if len(set.Accounts) != 2 || len(set.Accounts[0].Transactions)+len(set.Accounts[1].Transactions) != 0 {
			t.Errorf("accounts = %+v; want both, without transactions", set.Accounts)
		}
	})
	t.Run("probe", func(t *testing.T) {
		res, err := r.d.exec.TestConnection(t.Context(), claimApp, claimSlot)
		if err != nil || res.Status != 200 {
			t.Errorf("TestConnection = %+v, %v", res, err)
		}
	})
	t.Run("402 is a response", func(t *testing.T) {
		r.bridge.PaymentRequired = true
		defer func() { r.bridge.PaymentRequired = false }()
		res, resp := r.get(t, "https://bridge.simplefin.org/simplefin/accounts")
		if res.Code != "" || res.Status != 402 || resp["status"] != float64(402) {
			t.Errorf("accounts = %s; want a 402 response", res.Frame)
		}
		if st, _ := r.state(t); st.Status != grants.ConnConnected {
			t.Errorf("state after 402 = %s, want connected", st.Status)
		}
	})
	t.Run("a new claim on a claimed connection", func(t *testing.T) {
		// Without replace: refused before anything is sent, the new token
		// unused, the old credentials serving.
		before := r.bridge.Claims()
		fresh := r.bridge.NewSetupToken()
		if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, fresh, false); !errors.Is(err, errcode.AlreadyConnected) {
			t.Fatalf("a claim without replace on a claimed connection = %v, want ALREADY_CONNECTED", err)
		}
		// Cancelled (the caller went away): nothing is stored.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := r.d.pairing.ClaimSetupToken(ctx, claimApp, claimSlot, fresh, true); err == nil {
			t.Fatal("a cancelled replacement succeeded")
		}
		if n := r.bridge.Claims() - before; n != 0 {
			t.Fatalf("a refused or cancelled replacement sent %d claims", n)
		}
		if got := r.stored(t); !maps1(got, "access_credentials", creds[0]) {
			t.Fatal("a refused or cancelled replacement changed the stored credentials")
		}
		if res, _ := r.get(t, "https://bridge.simplefin.org/simplefin/accounts"); res.Code != "" || res.Status != 200 {
			t.Fatalf("accounts after a refused replacement = %s; want the old credentials serving", res.Frame)
		}
		if acts := r.replaceActs(t); acts != 0 {
			t.Fatalf("%d credential-replace acts before any replacement", acts)
		}
	})
	t.Run("the same token again", func(t *testing.T) {
		before := r.bridge.Claims()
		_, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, token, true)
		if got := reasonOf(t, err); got != claim.ReasonTokenRefused {
			t.Errorf("reason = %s, want %s", got, claim.ReasonTokenRefused)
		}
		if n := r.bridge.Claims() - before; n != 1 {
			t.Errorf("the second claim sent %d POSTs, want exactly 1", n)
		}
		if got := r.stored(t); !maps1(got, "access_credentials", creds[0]) {
			t.Error("a refused claim changed the stored credentials")
		}
		if res, _ := r.get(t, "https://bridge.simplefin.org/simplefin/accounts"); res.Code != "" || res.Status != 200 {
			t.Errorf("accounts after a failed replacement = %s; want the old credentials serving", res.Frame)
		}
		if acts := r.replaceActs(t); acts != 0 {
			t.Errorf("%d credential-replace acts after a failed replacement", acts)
		}
	})
	t.Run("a new claim the bridge answers 5xx", func(t *testing.T) {
		// The claim URL answers 503: the new token may or may not be
		// spent, and nothing of it is stored; the old credentials serve.
		r.bridge.OnClaim = func(w http.ResponseWriter, _ *http.Request, _ string) { w.WriteHeader(http.StatusServiceUnavailable) }
		defer func() { r.bridge.OnClaim = nil }()
		before := r.bridge.Claims()
		if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, r.bridge.NewSetupToken(), true); err == nil {
			t.Fatal("a claim the bridge answered 503 succeeded")
		}
		if n := r.bridge.Claims() - before; n != 1 {
			t.Errorf("the claim sent %d POSTs, want exactly 1", n)
		}
		if got := r.stored(t); !maps1(got, "access_credentials", creds[0]) {
			t.Error("a failed claim changed the stored credentials")
		}
		if st, _ := r.state(t); st.Status != grants.ConnConnected || st.LastError != "" {
			t.Errorf("state after a failed replacement = %+v, want connected", st)
		}
		if res, _ := r.get(t, "https://bridge.simplefin.org/simplefin/accounts"); res.Code != "" || res.Status != 200 {
			t.Errorf("accounts after a failed replacement = %s; want the old credentials serving", res.Frame)
		}
		if acts := r.replaceActs(t); acts != 0 {
			t.Errorf("%d credential-replace acts after a failed replacement", acts)
		}
	})
	t.Run("403 marks the connection error", func(t *testing.T) {
		r.bridge.RevokeAll()
		res, resp := r.get(t, "https://bridge.simplefin.org/simplefin/accounts")
		if res.Code != "" || res.Status != 403 || resp["status"] != float64(403) {
			t.Fatalf("accounts = %s; want a 403 response", res.Frame)
		}
		st, _ := r.state(t)
		if st.Status != grants.ConnError || st.LastError != pairing.AccessRevokedMessage || st.ClaimVerifiedAt == nil {
			t.Errorf("state after 403 = %+v; want error with the fixed sentence, marker kept", st)
		}
		// A new claim repairs it.
		if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, r.bridge.NewSetupToken(), false); err != nil {
			t.Fatalf("re-claim: %v", err)
		}
		if st, _ := r.state(t); st.Status != grants.ConnConnected || st.LastError != "" {
			t.Errorf("state after re-claim = %+v", st)
		}
	})
	t.Run("a replacement is journaled", func(t *testing.T) {
		if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, r.bridge.NewSetupToken(), true); err != nil {
			t.Fatalf("replacement claim: %v", err)
		}
		if got := r.stored(t); maps1(got, "access_credentials", creds[0]) {
			t.Error("the replacement kept the old credentials")
		}
		if res, _ := r.get(t, "https://bridge.simplefin.org/simplefin/accounts"); res.Code != "" || res.Status != 200 {
			t.Errorf("accounts after the replacement = %s; want served", res.Frame)
		}
		if acts := r.replaceActs(t); acts != 1 {
			t.Errorf("%d credential-replace acts after one replacement, want 1", acts)
		}
	})
	t.Run("revoke wipes the credentials", func(t *testing.T) {
		if _, err := r.d.grants.Revoke(t.Context(), claimApp, claimSlot); err != nil {
			t.Fatal(err)
		}
		if got := r.stored(t); len(got) != 0 {
			t.Errorf("after revoke %d values remain", len(got))
		}
		if _, st := r.state(t); st {
			t.Error("after revoke the state remains")
		}
	})
}

// replaceActs counts the journal's credential-replace acts of the slot.
func (r *claimRig) replaceActs(t *testing.T) int {
	t.Helper()
	j, err := r.d.records.Journal(t.Context(), journal.JournalQuery{AppID: claimApp, Kind: "acts"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range j {
		if e.Act == journal.ActReplace && e.Slot == claimSlot {
			n++
		}
	}
	return n
}

func maps1(m map[string]string, k, v string) bool { return len(m) == 1 && m[k] == v }

// claimCase is one hostile or failing variant.
type claimCase struct {
	name   string
	bridge func(b *claimtest.Bridge)
	rig    func(r *claimRig)
	cfg    func(*Config)
	token  func(b *claimtest.Bridge) string
	want   claim.Reason
	// claims is how many claim POSTs may reach the bridge (0 or 1), and
	// requests how many requests of any kind.
	claims, requests int
}

func hostileAccess(rewrite func(access string) string) func(b *claimtest.Bridge) {
	return func(b *claimtest.Bridge) {
		b.OnClaim = func(w http.ResponseWriter, _ *http.Request, access string) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, rewrite(access))
		}
	}
}

// claimCanary is in every hostile claim URL, so a leak check can find it.
const claimCanary = "CANARY-c1a1m"

func claimCases() []claimCase {
	fixed := func(u string) func(*claimtest.Bridge) string {
		return func(*claimtest.Bridge) string { return claimtest.Encode(u) }
	}
	return []claimCase{
		// The claim URL: refused before anything is sent (P3-C12.12-19).
		{name: "claim URL on another host", token: fixed("https://evil.example/simplefin/claim/" + claimCanary), want: claim.ReasonClaimHost},
		{name: "claim URL over http", token: fixed("http://bridge.simplefin.org/simplefin/claim/" + claimCanary), want: claim.ReasonClaimScheme},
		{name: "claim URL with userinfo", token: fixed("https://" + claimCanary + ":pw@bridge.simplefin.org/simplefin/claim/x"), want: claim.ReasonClaimUserinfo},
		{name: "claim URL hiding a host in userinfo", token: fixed("https://bridge.simplefin.org@evil.example/simplefin/claim/" + claimCanary), want: claim.ReasonClaimUserinfo},
		{name: "claim URL of another shape", token: fixed("https://bridge.simplefin.org/simplefin/accounts?" + claimCanary), want: claim.ReasonClaimPath},
		{name: "not a token", token: fixed("\x00" + claimCanary), want: claim.ReasonTokenShape},
		{name: "pasted URL instead of token", token: func(*claimtest.Bridge) string { return "https://bridge.simplefin.org/simplefin/claim/" + claimCanary }, want: claim.ReasonTokenShape},
		// The network before the claim: the token stays unused.
		{name: "bridge resolves to a private address", rig: func(r *claimRig) { r.resolver.addrs = []netip.Addr{netip.MustParseAddr("10.0.0.8")} }, want: claim.ReasonAddressRefused},
		{name: "bridge resolves to loopback among public", rig: func(r *claimRig) {
			r.resolver.addrs = []netip.Addr{netip.MustParseAddr(claimDocAddr), netip.MustParseAddr("127.0.0.1")}
		}, want: claim.ReasonAddressRefused},
		{name: "bridge unreachable", rig: func(r *claimRig) { r.dialer.fail = true }, want: claim.ReasonUnreachable},
		{name: "not a bridge", bridge: func(b *claimtest.Bridge) {
			b.OnInfo = func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"ok":true}`) }
		}, want: claim.ReasonNotBridge, requests: 1},
		{name: "info redirects", bridge: func(b *claimtest.Bridge) {
			b.OnInfo = func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://evil.example/info", http.StatusFound)
			}
		}, want: claim.ReasonNotBridge, requests: 1},
		// The claim's answer (P3-C12.12-18: never retried).
		{name: "claim answered 302", bridge: func(b *claimtest.Bridge) {
			b.OnClaim = func(w http.ResponseWriter, r *http.Request, _ string) {
				http.Redirect(w, r, "https://bridge.simplefin.org/simplefin/claim/again", http.StatusFound)
			}
		}, want: claim.ReasonClaimRedirect, claims: 1, requests: 2},
		{name: "claim answered 500", bridge: func(b *claimtest.Bridge) {
			b.OnClaim = func(w http.ResponseWriter, _ *http.Request, _ string) { http.Error(w, claimCanary, 500) }
		}, want: claim.ReasonUncertain, claims: 1, requests: 2},
		{name: "claim answer too large", bridge: hostileAccess(func(a string) string { return a + strings.Repeat("x", 16<<10) }), want: claim.ReasonUncertain, claims: 1, requests: 2},
		{name: "slow claim", cfg: func(c *Config) { c.RequestTimeout = 2 * time.Second }, bridge: func(b *claimtest.Bridge) {
			b.OnClaim = func(_ http.ResponseWriter, r *http.Request, _ string) { <-r.Context().Done() }
		}, want: claim.ReasonUncertain, claims: 1, requests: 2},
		// The access URL (P3-C12.12-20, -21): nothing stored.
		{name: "access URL on another host", bridge: hostileAccess(func(a string) string { return strings.Replace(a, "bridge.simplefin.org", "evil.example", 1) }), want: claim.ReasonAccessHost, claims: 1, requests: 2},
		{name: "access URL with another path", bridge: hostileAccess(func(a string) string { return a + "/x" }), want: claim.ReasonAccessPath, claims: 1, requests: 2},
		{name: "access URL over http", bridge: hostileAccess(func(a string) string { return strings.Replace(a, "https://", "http://", 1) }), want: claim.ReasonAccessScheme, claims: 1, requests: 2},
		{name: "access URL with CRLF", bridge: hostileAccess(func(a string) string { return a + "\r\n" }), want: claim.ReasonAccessShape, claims: 1, requests: 2},
		{name: "access URL with trailing bytes", bridge: hostileAccess(func(a string) string { return a + " https://evil.example/" }), want: claim.ReasonAccessShape, claims: 1, requests: 2},
		{name: "access URL without userinfo", bridge: hostileAccess(func(a string) string { _, rest, _ := strings.Cut(a, "@"); return "https://" + rest }), want: claim.ReasonAccessUserinfo, claims: 1, requests: 2},
	}
}

// TestClaimRefusals: every hostile variant is refused with its fixed
// sentence, stores nothing, and sends no more than the rule allows.
// conformance: P3-C12.12-18, P3-C12.12-19, P3-C12.12-20, P3-C12.12-21, P3-C12.12-23
func TestClaimRefusals(t *testing.T) {
	for _, tc := range claimCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := &claimtest.Bridge{}
			if tc.bridge != nil {
				tc.bridge(b)
			}
			var opts []func(*Config)
			if tc.cfg != nil {
				opts = append(opts, tc.cfg)
			}
			r := newClaimRig(t, b, opts...)
			if tc.rig != nil {
				tc.rig(r)
			}
			r.approveSimpleFIN(t)
			token := b.NewSetupToken()
			if tc.token != nil {
				token = tc.token(b)
			}
			_, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, token, false)
			if got := reasonOf(t, err); got != tc.want {
				t.Errorf("reason = %s (%v), want %s", got, err, tc.want)
			}
			f, _ := claim.Lookup(tc.want)
			if err.Error() != f.Sentence {
				t.Errorf("error = %q, want the fixed sentence %q", err, f.Sentence)
			}
			if n := b.Claims(); n != tc.claims {
				t.Errorf("bridge saw %d claim POSTs, want %d", n, tc.claims)
			}
			if n := len(b.Requests()); n != tc.requests {
				t.Errorf("bridge saw %d requests (%+v), want %d", n, b.Requests(), tc.requests)
			}
			if tc.requests == 0 && tc.rig == nil && (len(r.resolver.lookups()) != 0 || r.dialer.count() != 0) {
				t.Errorf("a claim refused on its token looked up %v and dialed %d times", r.resolver.lookups(), r.dialer.count())
			}
			if tc.want == claim.ReasonAddressRefused && r.dialer.count() != 0 {
				t.Errorf("a refused address was dialed %d times", r.dialer.count())
			}
			if got := r.stored(t); len(got) != 0 {
				t.Errorf("a refused claim stored %d values", len(got))
			}
			if st, ok := r.state(t); ok && st.ClaimVerifiedAt != nil {
				t.Errorf("a refused claim set claimVerifiedAt: %+v", st)
			}
			for _, leak := range append([]string{token, claimCanary}, b.Credentials()...) {
				if strings.Contains(err.Error(), leak) || strings.Contains(r.logs.String(), leak) {
					t.Errorf("the error or the log carries %q:\nerr: %v\nlog: %s", leak, err, r.logs.String())
				}
			}
		})
	}
}

// TestClaimNeverLeaks pastes a token and runs the hostile variants, then
// searches every surface snugd has for the token, the claim URL, the
// access URL and its credentials: the error, the log, the journal, the
// status report, the connection view and state, the hints, and the bytes
// of the database files themselves.
// conformance: P3-C12.12-23
func TestClaimNeverLeaks(t *testing.T) {
	b := &claimtest.Bridge{}
	r := newClaimRig(t, b)
	hints := r.d.Hints(t.Context())
	r.approveSimpleFIN(t)
	var canaries []string
	var errs []string
	token := b.NewSetupToken()
	claimURL, _ := claim.DecodeToken(token)
	canaries = append(canaries, token, claimURL, strings.TrimPrefix(claimURL, "https://bridge.simplefin.org/simplefin/claim/"))
	if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, token, false); err != nil {
		t.Fatal(err)
	}
	// The access URL, hostile: another path, so it is refused after the
	// token was spent.
	b.OnClaim = func(w http.ResponseWriter, _ *http.Request, access string) { io.WriteString(w, access+"/x\r\n") }
	t2 := b.NewSetupToken()
	u2, _ := claim.DecodeToken(t2)
	canaries = append(canaries, t2, u2)
	_, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, t2, false)
	if err == nil {
		t.Fatal("the hostile access URL was accepted")
	}
	errs = append(errs, err.Error())
	b.OnClaim = nil
	for _, cred := range b.Credentials() {
		user, pass, _ := strings.Cut(cred, ":")
		canaries = append(canaries, cred, user, pass, "https://"+cred+"@bridge.simplefin.org/simplefin")
	}
	r.get(t, "https://bridge.simplefin.org/simplefin/accounts?balances-only=1")

	var surfaces strings.Builder
	surfaces.WriteString(strings.Join(errs, "\n"))
	surfaces.WriteString(r.logs.String())
	j, err := r.d.records.Journal(t.Context(), journal.JournalQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&surfaces, "%+v\n", j)
	st, err := r.d.StatusReport(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&surfaces, "%+v\n", st)
	c, _ := r.d.grants.Connection(t.Context(), claimApp, claimSlot)
	cs, _ := r.state(t)
	fmt.Fprintf(&surfaces, "%+v\n%+v\n", c, cs)
drain:
	for {
		select {
		case h := <-hints:
			fmt.Fprintf(&surfaces, "%+v\n", h)
		default:
			break drain
		}
	}
	r.d.Close()
	for _, name := range []string{"snugd.db", "snugd.db-wal", "snugd.db-shm"} {
		if data, err := os.ReadFile(filepath.Join(r.dir, name)); err == nil {
			surfaces.Write(data)
		}
	}
	all := surfaces.String()
	for _, c := range canaries {
		if c != "" && strings.Contains(all, c) {
			t.Errorf("a surface carries %q", c)
		}
	}
}

// TestClaimCommitIsOneWrite: the credentials and claimVerifiedAt are
// written in one transaction; a transaction that fails after the write
// leaves neither.
// conformance: P3-C12.12-22
func TestClaimCommitIsOneWrite(t *testing.T) {
	r := newClaimRig(t, nil)
	r.approveSimpleFIN(t)
	access, err := claim.ParseAccessURL([]byte("https://u1:p1@bridge.simplefin.org/simplefin"), []string{"bridge.simplefin.org"}, "/simplefin")
	if err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash after the write")
	err = r.d.store.Update(t.Context(), func(tx *store.Tx) error {
		if err := pairing.WriteClaim(tx, claimApp, claimSlot, "access_credentials", access); err != nil {
			return err
		}
		return crash
	})
	if !errors.Is(err, crash) {
		t.Fatalf("Update = %v", err)
	}
	if got := r.stored(t); len(got) != 0 {
		t.Errorf("a rolled-back claim left %d values", len(got))
	}
	if _, ok := r.state(t); ok {
		t.Error("a rolled-back claim left the state with its marker")
	}
}

// TestClaimRevokedMeanwhile: a row revoked while the claim ran takes
// nothing, and the refusal says the token is used up.
// conformance: P3-C12.12-22
func TestClaimRevokedMeanwhile(t *testing.T) {
	b := &claimtest.Bridge{}
	r := newClaimRig(t, b)
	r.approveSimpleFIN(t)
	b.OnClaim = func(w http.ResponseWriter, req *http.Request, access string) {
		if _, err := r.d.grants.Revoke(context.Background(), claimApp, claimSlot); err != nil {
			t.Errorf("Revoke: %v", err)
		}
		io.WriteString(w, access)
	}
	_, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, b.NewSetupToken(), false)
	if got := reasonOf(t, err); got != claim.ReasonConnectionChanged {
		t.Errorf("reason = %s, want %s", got, claim.ReasonConnectionChanged)
	}
	if got := r.stored(t); len(got) != 0 {
		t.Errorf("a claim into a revoked row stored %d values", len(got))
	}
	if f := err.(*pairing.ClaimRefusedError).Fate; f != claim.TokenUsed {
		t.Errorf("fate = %s, want used", f)
	}
}

// TestClaimNeedsTokenClaimRow: only an approved row of the token-claim
// family takes a claim, and nothing is sent otherwise.
func TestClaimNeedsTokenClaimRow(t *testing.T) {
	b := &claimtest.Bridge{}
	r := newClaimRig(t, b)
	token := b.NewSetupToken()
	if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, token, false); !errors.Is(err, errcode.ConnectionNotFound) {
		t.Errorf("no row: %v, want CONNECTION_NOT_FOUND", err)
	}
	if _, err := r.d.proposers.ProposeUser(t.Context(), claimApp, claimSlot, simplefinRequirement(claimSlot)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, token, false); !errors.Is(err, errcode.ConnectionNotApproved) {
		t.Errorf("declared row: %v, want CONNECTION_NOT_APPROVED", err)
	}
	other, _ := json.Marshal(map[string]any{
		"slot": "other", "provider": map[string]any{"name": "Example Bank API"}, "kind": "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{"api.bank.example"},
	})
	if _, err := r.d.proposers.ProposeUser(t.Context(), claimApp, "other", other); err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.grants.Approve(t.Context(), claimApp, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, "other", token, false); !errors.Is(err, errcode.NotFound) {
		t.Errorf("a basic_auth row outside the registry: %v, want NOT_FOUND", err)
	}
	if n := len(b.Requests()); n != 0 {
		t.Errorf("refused claims sent %d requests", n)
	}
}

// TestClaimNotStored: when the one write fails, the refusal says so
// (without the URL), nothing of the write is kept, and the log names the
// failure without the credentials.
// conformance: P3-C12.12-22, P3-C12.12-23
func TestClaimNotStored(t *testing.T) {
	b := &claimtest.Bridge{}
	r := newClaimRig(t, b)
	r.approveSimpleFIN(t)
	// A stored state that no longer decodes makes the commit fail after
	// the credential was written inside the transaction.
	if err := r.d.store.Update(t.Context(), func(tx *store.Tx) error {
		return tx.PutSecret(store.ConnectionStateKey(claimApp, claimSlot), store.Secret(`{"status":"bogus"}`))
	}); err != nil {
		t.Fatal(err)
	}
	token := b.NewSetupToken()
	_, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, token, false)
	if got := reasonOf(t, err); got != claim.ReasonNotStored {
		t.Fatalf("reason = %s (%v), want %s", got, err, claim.ReasonNotStored)
	}
	if b.Claims() != 1 {
		t.Errorf("bridge saw %d claims, want 1", b.Claims())
	}
	if got := r.stored(t); len(got) != 0 {
		t.Errorf("a failed commit kept %d values", len(got))
	}
	if !strings.Contains(r.logs.String(), "store claimed credentials") {
		t.Errorf("the log does not say the write failed:\n%s", r.logs.String())
	}
	for _, leak := range append([]string{token}, b.Credentials()...) {
		if strings.Contains(r.logs.String()+err.Error(), leak) {
			t.Errorf("the log or the error carries %q", leak)
		}
	}
}
