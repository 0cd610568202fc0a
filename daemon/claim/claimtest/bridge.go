// Package claimtest is a SimpleFIN Bridge simulator for tests of the
// token-claim family, following the protocol as the
// bridge's own documentation describes it (checked 2026-12-01:
// https://www.simplefin.org/protocol.html,
// https://beta-bridge.simplefin.org/info/developers):
//
//   - a setup token is the base64 of a claim URL
//     https://HOST/simplefin/claim/ID;
//   - POST to the claim URL (empty body) answers, once, the access URL
//     https://USER:PASS@HOST/simplefin as text/plain; a second POST of the
//     same token answers 403;
//   - GET /simplefin/info answers {"versions":["1.0",…]} without auth;
//   - GET /simplefin/accounts with the access URL's credentials as Basic
//     auth answers {"errors":[…],"accounts":[…]}, honouring start-date and
//     end-date (unix seconds), pending=1, account=ID (repeatable) and
//     balances-only=1; 402 when payment is required, 403 when the access
//     was revoked or the credentials are unknown.
//
// Hostile variants are hooks on Bridge (OnClaim, OnInfo). Bridge counts
// every request, so a test can prove that nothing was sent twice. It is
// for tests only and is never linked into snugd.
package claimtest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DefaultHost and DefaultAccessPath are the registry's pinned values for
// SimpleFIN.
const (
	DefaultHost       = "bridge.simplefin.org"
	DefaultAccessPath = "/simplefin"
)

// Request is what the bridge received.
type Request struct {
	Method   string
	Host     string
	Path     string
	RawQuery string
	User     string // the Basic auth user name, "" when none
	Body     string
}

// Bridge is the simulator; its zero value is a bridge on DefaultHost and
// DefaultAccessPath. It is an http.Handler and safe for concurrent use.
type Bridge struct {
	// Host and AccessPath are what the URLs the bridge mints name.
	Host       string
	AccessPath string

	// OnClaim, when set, answers a claim of a valid token in place of the
	// bridge: the token is already spent and access is the access URL the
	// bridge minted for it. Hostile variants rewrite it, redirect, stall.
	OnClaim func(w http.ResponseWriter, r *http.Request, access string)
	// OnInfo, when set, answers GET …/info in place of the bridge.
	OnInfo http.HandlerFunc
	// PaymentRequired makes every accounts read answer 402.
	PaymentRequired bool

	mu       sync.Mutex
	tokens   map[string]bool   // claim id → claimed
	users    map[string]string // user name → password
	revoked  map[string]bool
	requests []Request
}

func (b *Bridge) host() string {
	if b.Host != "" {
		return b.Host
	}
	return DefaultHost
}

func (b *Bridge) accessPath() string {
	if b.AccessPath != "" {
		return b.AccessPath
	}
	return DefaultAccessPath
}

// NewSetupToken mints a one-time setup token, as the bridge's "create"
// page does: the standard base64 of a fresh claim URL.
func (b *Bridge) NewSetupToken() string { return b.SetupTokenFor("TOKEN-" + randomHex(12)) }

// SetupTokenFor registers the token id and returns its setup token, for a
// bridge in another process whose tokens a test must know in advance.
func (b *Bridge) SetupTokenFor(id string) string {
	b.mu.Lock()
	if b.tokens == nil {
		b.tokens = map[string]bool{}
	}
	if _, ok := b.tokens[id]; !ok {
		b.tokens[id] = false
	}
	b.mu.Unlock()
	return Encode("https://" + b.host() + b.accessPath() + "/claim/" + id)
}

// Encode returns a setup token for any claim URL: its standard base64.
func Encode(claimURL string) string { return base64.StdEncoding.EncodeToString([]byte(claimURL)) }

// Requests returns a copy of every request received so far.
func (b *Bridge) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// Count returns how many requests had method and a path with suffix.
func (b *Bridge) Count(method, suffix string) int {
	n := 0
	for _, r := range b.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// Claims returns how many claim POSTs arrived, valid or not.
func (b *Bridge) Claims() int {
	n := 0
	for _, r := range b.Requests() {
		if r.Method == http.MethodPost && strings.Contains(r.Path, "/claim/") {
			n++
		}
	}
	return n
}

// RevokeAll disables every access URL minted so far, as the user does on
// the bridge's site: later reads answer 403.
func (b *Bridge) RevokeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.revoked == nil {
		b.revoked = map[string]bool{}
	}
	for u := range b.users {
		b.revoked[u] = true
	}
}

// Credentials returns the user name and password of every access URL
// minted so far, as "user:pass" (for leak checks).
func (b *Bridge) Credentials() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for u, p := range b.users {
		out = append(out, u+":"+p)
	}
	slices.Sort(out)
	return out
}

// ServeHTTP implements the protocol.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	user, _, _ := r.BasicAuth()
	b.mu.Lock()
	b.requests = append(b.requests, Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery, User: user, Body: string(body)})
	b.mu.Unlock()

	base := b.accessPath()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == base+"/info":
		if b.OnInfo != nil {
			b.OnInfo(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"versions":["1.0","2.0"]}`)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, base+"/claim/"):
		b.claim(w, r, strings.TrimPrefix(r.URL.Path, base+"/claim/"), len(body))
	case r.Method == http.MethodGet && r.URL.Path == base+"/accounts":
		b.accounts(w, r)
	default:
		http.Error(w, "Not Found", http.StatusNotFound)
	}
}

// claim spends a token once and answers its access URL.
func (b *Bridge) claim(w http.ResponseWriter, r *http.Request, id string, bodyLen int) {
	b.mu.Lock()
	claimed, known := b.tokens[id]
	if !known || claimed || bodyLen != 0 {
		b.mu.Unlock()
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	b.tokens[id] = true
	user, pass := "user"+randomHex(8), randomHex(24)
	if b.users == nil {
		b.users = map[string]string{}
	}
	b.users[user] = pass
	b.mu.Unlock()
	access := "https://" + user + ":" + pass + "@" + b.host() + b.accessPath()
	if b.OnClaim != nil {
		b.OnClaim(w, r, access)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, access)
}

// authorized reports the Basic auth check: 0 when the credentials are good,
// else the status to answer.
func (b *Bridge) authorized(r *http.Request) int {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return http.StatusForbidden
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	want, known := b.users[user]
	if !known || b.revoked[user] || subtle.ConstantTimeCompare([]byte(pass), []byte(want)) != 1 {
		return http.StatusForbidden
	}
	if b.PaymentRequired {
		return http.StatusPaymentRequired
	}
	return 0
}

// Account and Transaction are the protocol's account set objects.
type Account struct {
	Org              Org           `json:"org"`
	ID               string        `json:"id"`
	Name             string        `json:"name"`
	Currency         string        `json:"currency"`
	Balance          string        `json:"balance"`
	AvailableBalance string        `json:"available-balance,omitempty"`
	BalanceDate      int64         `json:"balance-date"`
	Transactions     []Transaction `json:"transactions,omitempty"`
}

// Org is an account's institution.
type Org struct {
	Domain  string `json:"domain,omitempty"`
	SFINURL string `json:"sfin-url"`
	Name    string `json:"name,omitempty"`
}

// Transaction is one posted or pending transaction.
type Transaction struct {
	ID           string `json:"id"`
	Posted       int64  `json:"posted"`
	Amount       string `json:"amount"`
	Description  string `json:"description"`
	Payee        string `json:"payee,omitempty"`
	Memo         string `json:"memo,omitempty"`
	TransactedAt int64  `json:"transacted_at,omitempty"`
	Pending      bool   `json:"pending,omitempty"`
}

// AccountSet is the answer of GET /accounts.
type AccountSet struct {
	Errors   []string  `json:"errors"`
	Accounts []Account `json:"accounts"`
}

// Fixture times: 2026-11-01, 2026-11-15 and 2026-11-29 (UTC).
const (
	Nov01 = 1761955200
	Nov15 = 1763164800
	Nov29 = 1764374400
)

// fixture is the bridge's account data.
func (b *Bridge) fixture() []Account {
	org := Org{Domain: "bank.example", SFINURL: "https://" + b.host() + b.accessPath(), Name: "Example Bank"}
	return []Account{
		{Org: org, ID: "ACT-checking", Name: "Checking", Currency: "USD", Balance: "1234.56", AvailableBalance: "1200.00", BalanceDate: Nov29,
			Transactions: []Transaction{
				{ID: "TRN-1", Posted: Nov01, Amount: "-42.10", Description: "GROCERY STORE", Payee: "Grocery", Memo: "weekly", TransactedAt: Nov01},
				{ID: "TRN-2", Posted: Nov15, Amount: "2500.00", Description: "PAYROLL", Payee: "Employer"},
				{ID: "TRN-3", Posted: 0, Amount: "-9.99", Description: "STREAMING", Pending: true, TransactedAt: Nov29},
			}},
		{Org: org, ID: "ACT-savings", Name: "Savings", Currency: "USD", Balance: "10000.00", BalanceDate: Nov29,
			Transactions: []Transaction{
				{ID: "TRN-4", Posted: Nov29, Amount: "12.34", Description: "INTEREST"},
			}},
	}
}

// accounts answers GET /accounts with its query parameters.
func (b *Bridge) accounts(w http.ResponseWriter, r *http.Request) {
	if st := b.authorized(r); st != 0 {
		http.Error(w, http.StatusText(st), st)
		return
	}
	q := r.URL.Query()
	start, errStart := optionalInt(q.Get("start-date"))
	end, errEnd := optionalInt(q.Get("end-date"))
	set := AccountSet{Errors: []string{}}
	if errStart != nil || errEnd != nil {
		set.Errors = append(set.Errors, "start-date and end-date must be unix seconds")
	}
	pending := q.Get("pending") == "1"
	balancesOnly := q.Get("balances-only") == "1"
	wanted := q["account"]
	for _, a := range b.fixture() {
		if len(wanted) > 0 && !slices.Contains(wanted, a.ID) {
			continue
		}
		var keep []Transaction
		for _, t := range a.Transactions {
			switch {
			case balancesOnly:
			case t.Pending && !pending:
			case !t.Pending && start > 0 && t.Posted < start:
			case !t.Pending && end > 0 && t.Posted >= end:
			default:
				keep = append(keep, t)
			}
		}
		a.Transactions = keep
		set.Accounts = append(set.Accounts, a)
	}
	if set.Accounts == nil {
		set.Accounts = []Account{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

func optionalInt(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
