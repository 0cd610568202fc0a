package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/claim"
	"github.com/snug/snugd/daemon/claim/claimtest"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/transports"
)

// bridgeResolver answers every name with a documentation address,
// and newClaimEnv's dialer connects it to the simulator's listener:
// the public transport's test seams, no gate touched.
type bridgeResolver struct{}

func (bridgeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("203.0.113.21")}, nil
}

func newClaimEnv(t *testing.T) (*env, *claimtest.Bridge) {
	t.Helper()
	b := &claimtest.Bridge{}
	srv, roots := claimtest.NewTLSServer(t, b, claimtest.DefaultHost)
	to := srv.Listener.Addr().String()
	e := newEnvWith(t, func(c *daemon.Config) {
		c.Public = &transports.Public{Resolver: bridgeResolver{}, RootCAs: roots, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", to)
		}}
	})
	req, _ := json.Marshal(map[string]any{
		"slot": "bank", "provider": map[string]any{"name": "SimpleFIN"}, "kind": "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{claimtest.DefaultHost},
	})
	if _, err := e.ctl.PutConnection(t.Context(), "budget", "bank", req); err != nil {
		t.Fatal(err)
	}
	e.seeded = append(e.seeded, "budget") // the administrator's app, shared with each host the test pairs
	if _, err := e.ctl.Approve(t.Context(), "budget", "bank"); err != nil {
		t.Fatal(err)
	}
	return e, b
}

// TestClaimRoute: a paired host claims a token and gets the connection
// with its marker; the token and the credentials never come back.
// conformance: P3-C12.12-22
func TestClaimRoute(t *testing.T) {
	e, b := newClaimEnv(t)
	host := e.host(e.pair("desktop", ""), "")
	token := b.NewSetupToken()
	c, err := host.Claim(t.Context(), "budget", "bank", token, false)
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if c.State == nil || c.State.Status != "connected" || c.State.ClaimVerifiedAt == nil {
		t.Errorf("state = %+v; want connected with claimVerifiedAt", c.State)
	}
	raw, _ := json.Marshal(c)
	for _, leak := range append([]string{token}, b.Credentials()...) {
		if strings.Contains(string(raw), leak) || strings.Contains(e.logs.String(), leak) {
			t.Errorf("the answer or the log carries %q", leak)
		}
	}
	if n := b.Claims(); n != 1 {
		t.Errorf("bridge saw %d claims, want 1", n)
	}
}

// TestClaimRouteRefusals: a refusal is CLAIM_REFUSED (422) with the fixed
// sentence and its reason; a malformed body is one fixed BAD_REQUEST;
// neither echoes the paste.
// conformance: P3-C12.12-19, P3-C12.12-23
func TestClaimRouteRefusals(t *testing.T) {
	e, b := newClaimEnv(t)
	const canary = "CANARY-route-9d1"
	_, err := e.ctl.Claim(t.Context(), "budget", "bank", claimtest.Encode("https://evil.example/simplefin/claim/"+canary), false)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || ae.Code != errcode.ClaimRefused {
		t.Fatalf("Claim(foreign host) = %v; want 422 CLAIM_REFUSED", err)
	}
	want, _ := claim.Lookup(claim.ReasonClaimHost)
	if ae.Message != want.Sentence || len(ae.Details) != 1 || ae.Details[0] != (Detail{Path: "setupToken", Rule: "claim-host"}) || ae.Retryable {
		t.Errorf("refusal = %+v; want the fixed sentence and the reason", ae)
	}
	token := e.pair("desktop", "")
	for _, body := range []string{
		`{"setupToken": 5}`, `{"setupToken": ""}`, `{}`, `{"setupToken": "` + canary + `", "x": 1}`,
		`{"setupToken": "` + canary + `"} {}`, `{"setupToken": "` + canary, `["` + canary + `"]`,
	} {
		resp, got := e.do(req{method: http.MethodPost, path: "/v1/apps/budget/connections/bank/claim", header: jsonHeader("Authorization", "Bearer "+token), body: body})
		if resp.StatusCode != http.StatusBadRequest || errCode(got) != "BAD_REQUEST" || strings.Contains(got, canary) {
			t.Errorf("POST claim %s = %d %s; want a fixed BAD_REQUEST", body, resp.StatusCode, got)
		}
	}
	if n := len(b.Requests()); n != 0 {
		t.Errorf("refused claims sent %d requests", n)
	}
	if strings.Contains(e.logs.String(), canary) {
		t.Error("the log carries the paste")
	}
}

// TestClaimRefusalsDocumented: API.md lists every refusal with its fate
// and its sentence, exactly as daemon/claim has them.
func TestClaimRefusalsDocumented(t *testing.T) {
	doc, err := os.ReadFile("API.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range claim.Refusals() {
		row := "| `" + string(f.Reason) + "` | " + string(f.Fate) + " | " + f.Sentence + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("API.md lacks the row %s", row)
		}
	}
}

// TestClaimUnreachableIsRetryable: the one refusal whose sentence says
// "try again" (the bridge could not be reached, the token is unused) is
// retryable; the others are not (TestClaimRouteRefusals).
func TestClaimUnreachableIsRetryable(t *testing.T) {
	e := newEnvWith(t, func(c *daemon.Config) {
		c.Public = &transports.Public{Resolver: bridgeResolver{}, Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("connection refused")
		}}
	})
	req, _ := json.Marshal(map[string]any{
		"slot": "bank", "provider": map[string]any{"name": "SimpleFIN"}, "kind": "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{claimtest.DefaultHost},
	})
	if _, err := e.ctl.PutConnection(t.Context(), "budget", "bank", req); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.Approve(t.Context(), "budget", "bank"); err != nil {
		t.Fatal(err)
	}
	_, err := e.ctl.Claim(t.Context(), "budget", "bank", (&claimtest.Bridge{}).NewSetupToken(), false)
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != errcode.ClaimRefused || len(ae.Details) != 1 || ae.Details[0].Rule != string(claim.ReasonUnreachable) {
		t.Fatalf("Claim(unreachable bridge) = %v; want CLAIM_REFUSED unreachable", err)
	}
	if !ae.Retryable || !strings.Contains(ae.Message, "try again") {
		t.Errorf("refusal = %+v; want retryable beside its \"try again\"", ae)
	}
}
