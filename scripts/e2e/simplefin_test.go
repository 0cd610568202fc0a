//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/claim/claimtest"
)

// The SimpleFIN scenario: the real snugd claims a setup token from a
// SimpleFIN Bridge simulator (daemon/claim/claimtest) that the "public"
// upstream serves for Host bridge.simplefin.org, the registry's pinned
// host. The harness's /etc/hosts maps that name to the upstream's
// documentation address and its certificate names it, so snugd reaches
// it exactly as it would reach the real bridge: the system resolver, the
// SSRF guard, TLS verification against SSL_CERT_FILE.

// simplefinHost is the registry's pinned SimpleFIN host.
const simplefinHost = claimtest.DefaultHost

// The setup tokens the upstream's bridge knows from its start: the test
// runs in another process and must know them in advance.
const (
	sfTokenID    = "E2E-TOKEN-1"
	sfTokenSpare = "E2E-TOKEN-2"
)

// newSimpleFINUpstream is the bridge the upstream helper serves for Host
// simplefinHost, reporting every request as an event first.
func newSimpleFINUpstream(out *reporter) http.Handler {
	b := &claimtest.Bridge{}
	b.SetupTokenFor(sfTokenID)
	b.SetupTokenFor(sfTokenSpare)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		out.report(event{Kind: "request", Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Body: string(body)})
		r.Body = io.NopCloser(bytes.NewReader(body))
		b.ServeHTTP(w, r)
	})
}

// sfSetupToken is the setup token of id on the upstream's bridge.
func sfSetupToken(id string) string {
	return claimtest.Encode("https://" + simplefinHost + claimtest.DefaultAccessPath + "/claim/" + id)
}

const sfRequirement = `{
  "slot": "bank",
  "provider": {"name": "SimpleFIN"},
  "kind": "basic_auth",
  "fields": [{"key": "access_credentials", "label": "Access credentials", "type": "secret"}],
  "request": {"headerTemplate": {"Authorization": "Basic {{base64(access_credentials)}}"}},
  "declaredApiHosts": ["bridge.simplefin.org"]
}`

// TestSimpleFINE2E: paste → claim → accounts read with the credential
// placed → revoke wipes it, through the real binary and snugd ctl.
// conformance: P3-C12.12-18, P3-C12.12-19, P3-C12.12-22, P3-C12.12-23
func TestSimpleFINE2E(t *testing.T) {
	h := setUpHarness(t)
	bin := buildSnugd(t, h.dir)
	s := startSnugd(t, h, bin)
	token := s.pairHost(t, "E2E SimpleFIN")

	if st, raw, err := s.call(t, http.MethodPut, "/v1/apps/"+app+"/connections/bank", token, map[string]json.RawMessage{"requirement": json.RawMessage(sfRequirement)}, nil); err != nil || st/100 != 2 {
		t.Fatalf("PUT the SimpleFIN connection = %d %s, %v", st, raw, err)
	}
	if code, out, errOut := s.ctl(t, "", "approve", app, "bank", "--yes"); code != 0 {
		t.Fatalf("snugd ctl approve = %d\n%s%s", code, out, errOut)
	}

	setup := sfSetupToken(sfTokenID)
	leaks := []string{setup, sfTokenID, sfSetupToken(sfTokenSpare), sfTokenSpare}

	t.Run("a claim URL on another host is refused unsent", func(t *testing.T) {
		mark := h.pub.mark()
		hostile := claimtest.Encode("https://api.e2e.test/simplefin/claim/" + sfTokenSpare)
		code, out, errOut := s.ctl(t, hostile+"\n", "pair", "claim", app, "bank")
		if code != 1 || !strings.Contains(errOut, "CLAIM_REFUSED") || !strings.Contains(errOut, "setupToken: claim-host") {
			t.Errorf("snugd ctl pair claim (foreign host) = %d\n%s%s", code, out, errOut)
		}
		if n := len(h.pub.requestsSince(mark)); n != 0 {
			t.Errorf("the upstream saw %d requests for a refused token, want 0", n)
		}
	})

	t.Run("paste and claim", func(t *testing.T) {
		mark := h.pub.mark()
		code, out, errOut := s.ctl(t, "  "+setup+"\n", "pair", "claim", app, "bank")
		if code != 0 || !strings.Contains(out, "connected") {
			t.Fatalf("snugd ctl pair claim = %d\n%s%s", code, out, errOut)
		}
		reqs := h.pub.awaitRequests(mark, 2)
		if len(reqs) != 2 || reqs[0].Method != "GET" || reqs[0].Path != "/simplefin/info" ||
			reqs[1].Method != "POST" || reqs[1].Path != "/simplefin/claim/"+sfTokenID || reqs[1].Body != "" {
			t.Fatalf("the bridge saw %+v; want the /info probe, then one empty claim POST", reqs)
		}
		code, out, _ = s.ctl(t, "", "connections", app, "--json")
		if code != 0 || !strings.Contains(out, `"claimVerifiedAt"`) || !strings.Contains(out, `"connected"`) {
			t.Errorf("snugd ctl connections --json = %d\n%s", code, out)
		}
	})

	t.Run("the same token again is the bridge's 403, sent once", func(t *testing.T) {
		mark := h.pub.mark()
		code, _, errOut := s.ctl(t, setup, "pair", "claim", app, "bank", "--yes")
		if code != 1 || !strings.Contains(errOut, "setupToken: token-refused") {
			t.Errorf("second claim = %d\n%s", code, errOut)
		}
		reqs := h.pub.awaitRequests(mark, 2)
		claims := 0
		for _, r := range reqs {
			if r.Method == "POST" {
				claims++
			}
		}
		if claims != 1 {
			t.Errorf("the second claim sent %d POSTs, want 1 (never retried)", claims)
		}
	})

	var creds string
	t.Run("accounts read with the credential placed", func(t *testing.T) {
		mark := h.pub.mark()
		u := fmt.Sprintf("https://%s/simplefin/accounts?start-date=%d&end-date=%d&pending=1", simplefinHost, claimtest.Nov01, claimtest.Nov29)
		r := s.mustNet(t, token, "sf-accounts", "GET", u, "")
		if !r.OK || r.Status != 200 {
			t.Fatalf("GET accounts = %+v", r)
		}
		var set claimtest.AccountSet
		if err := json.Unmarshal([]byte(r.Body), &set); err != nil || len(set.Accounts) != 2 || len(set.Accounts[0].Transactions) != 3 {
			t.Errorf("accounts = %s, %v; want two accounts, checking with three transactions", r.Body, err)
		}
		reqs := h.pub.awaitRequests(mark, 1)
		if len(reqs) != 1 {
			t.Fatalf("the bridge saw %d requests, want 1", len(reqs))
		}
		auth, ok := strings.CutPrefix(first(reqs[0].Header, "Authorization"), "Basic ")
		raw, err := base64.StdEncoding.DecodeString(auth)
		if !ok || err != nil || !strings.Contains(string(raw), ":") {
			t.Fatalf("the accounts read carried no Basic credentials: %v", reqs[0].Header)
		}
		creds = string(raw)
		user, pass, _ := strings.Cut(creds, ":")
		leaks = append(leaks, creds, user, pass, auth)
		if strings.Contains(r.Body, pass) {
			t.Error("the app's answer carries the password")
		}
		bal := s.mustNet(t, token, "sf-balances", "GET", "snug-connection://bank/simplefin/accounts?balances-only=1", "")
		if !bal.OK || bal.Status != 200 || strings.Contains(bal.Body, "transactions") {
			t.Errorf("balances-only = %+v", bal)
		}
	})

	t.Run("revoke wipes the credential", func(t *testing.T) {
		if code, out, errOut := s.ctl(t, "", "revoke", app, "bank"); code != 0 {
			t.Fatalf("snugd ctl revoke = %d\n%s%s", code, out, errOut)
		}
		code, out, _ := s.ctl(t, "", "connections", app, "--json")
		if code != 0 || strings.Contains(out, "claimVerifiedAt") {
			t.Errorf("after revoke the state remains:\n%s", out)
		}
		// Reconnected and approved again, the row has no credential: the
		// executor refuses the read, and nothing reaches the bridge.
		for _, act := range [][]string{{"reconnect", app, "bank"}, {"approve", app, "bank", "--yes"}} {
			if code, out, errOut := s.ctl(t, "", act...); code != 0 {
				t.Fatalf("snugd ctl %s = %d\n%s%s", act, code, out, errOut)
			}
		}
		mark := h.pub.mark()
		r := s.mustNet(t, token, "sf-after-revoke", "GET", "https://"+simplefinHost+"/simplefin/accounts", "")
		if r.OK || r.code() != "NET_AUTH_FAILED" {
			t.Errorf("GET accounts after revoke = %+v; want NET_AUTH_FAILED (no credential to place)", r)
		}
		// A positive control after it: a request that does go out is
		// reported, so the count before it is complete.
		if st := h.direct(t, pubNS().nsAddr+":443", simplefinHost, "/simplefin/info"); st != 200 {
			t.Errorf("direct GET /simplefin/info = %d", st)
		}
		reqs := h.pub.awaitRequests(mark, 1)
		if len(reqs) != 1 || reqs[0].Path != "/simplefin/info" {
			t.Errorf("after revoke the bridge saw %+v; want only the control", reqs)
		}
	})

	// conformance: P3-C12.12-23
	t.Run("nothing of the token or the access URL in snugd's output", func(t *testing.T) {
		logs := s.log.String()
		for _, l := range leaks {
			if l != "" && strings.Contains(logs, l) {
				t.Errorf("snugd's log carries %q", l)
			}
		}
		_, out, errOut := s.ctl(t, "", "status", "--json")
		_, j, _ := s.ctl(t, "", "journal", "--json")
		for _, l := range leaks {
			if l != "" && strings.Contains(out+errOut+j, l) {
				t.Errorf("snugd ctl status or journal carries %q", l)
			}
		}
	})
}
