//go:build e2e

package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestE2EPairingByInvitation is issue 10 item 6's attack against the real
// binary: a local process floods POST /v1/hosts/pair as desktop hosts
// under fresh names, which displaces the request a real desktop host is
// waiting on (its code no longer approves anything); the host the
// administrator invites with snugd ctl hosts invite pairs amid the same
// flood, redeems its token and is served. The invitation is in no log
// (snugd runs at debug level here) and in no database file.
func TestE2EPairingByInvitation(t *testing.T) {
	h := setUpHarness(t)
	bin := buildSnugd(t, h.dir)
	s := startSnugd(t, h, bin)

	verifier, challenge := newVerifier()
	type pairAnswer struct {
		PairingID string `json:"pairingId"`
		Code      string `json:"code"`
		State     string `json:"state"`
		Invited   bool   `json:"invited"`
	}
	pair := func(name, invitation string) (int, pairAnswer, []byte) {
		t.Helper()
		body := map[string]string{"name": name, "surface": "desktop", "challenge": challenge}
		if invitation != "" {
			body["invitation"] = invitation
		}
		var p pairAnswer
		st, raw, err := s.call(t, http.MethodPost, "/v1/hosts/pair", "", body, &p)
		if err != nil {
			t.Fatalf("POST /v1/hosts/pair (%s) = %v", name, err)
		}
		return st, p, raw
	}
	n := 0
	flood := func(count int) {
		t.Helper()
		for range count { // bounded: at most a few dozen requests
			n++
			if st, _, raw := pair(fmt.Sprintf("flood %d", n), ""); st != http.StatusOK {
				t.Fatalf("flood request %d = %d %s", n, st, raw)
			}
		}
	}

	st, waiting, raw := pair("Laptop", "")
	if st != http.StatusOK || waiting.Code == "" {
		t.Fatalf("POST /v1/hosts/pair (waiting) = %d %s", st, raw)
	}
	flood(33) // twice the 16 desktop requests that wait at once, and one
	if code, out, errOut := s.ctl(t, "", "hosts", "approve", waiting.Code, "--yes"); code == 0 {
		t.Fatalf("snugd ctl hosts approve of the displaced request = 0, want a refusal:\n%s%s", out, errOut)
	}

	code, out, errOut := s.ctl(t, "", "hosts", "invite", "Laptop")
	invitation := regexp.MustCompile(`snugi_[A-Za-z0-9_-]{43}`).FindString(out)
	if code != 0 || invitation == "" || !strings.Contains(out, "expires at") {
		t.Fatalf("snugd ctl hosts invite = %d\n%s%s", code, out, errOut)
	}
	flood(16)
	st, p, raw := pair("laptop", invitation)
	if st != http.StatusOK || p.State != "approved" || !p.Invited || p.Code != "" {
		t.Fatalf("POST /v1/hosts/pair with the invitation amid the flood = %d %s, want approved and invited", st, raw)
	}
	flood(16)
	var r struct {
		State string `json:"state"`
		Token string `json:"token"`
	}
	if st, raw, err := s.call(t, http.MethodPost, "/v1/hosts/pair/"+p.PairingID+"/redeem", "", map[string]string{"verifier": verifier}, &r); err != nil || st != http.StatusOK || r.State != "approved" || r.Token == "" {
		t.Fatalf("redeem after the flood = %d %s, %v; want approved with a token", st, raw, err)
	}
	if st, raw, err := s.call(t, http.MethodGet, "/v1/status", r.Token, nil, nil); err != nil || st != http.StatusOK {
		t.Errorf("GET /v1/status with the invited host's token = %d %s, %v", st, raw, err)
	}
	if st, _, _ := pair("Laptop", invitation); st != http.StatusForbidden {
		t.Errorf("a second pair request with the used invitation = %d, want 403", st)
	}
	if code, out, _ := s.ctl(t, "", "hosts", "list"); code != 0 || !strings.Contains(out, `calling itself "Laptop"`) {
		t.Errorf("snugd ctl hosts list = %d\n%s", code, out)
	}
	if code, out, _ := s.ctl(t, "", "journal", "--json"); code != 0 || !strings.Contains(out, "by invitation") {
		t.Errorf("snugd ctl journal --json = %d, want a host-pair act by invitation:\n%s", code, out)
	}

	secret := invitation[len("snugi_"):]
	if strings.Contains(s.log.String(), secret) {
		t.Errorf("snugd's log holds the invitation")
	}
	for _, name := range []string{"snugd.db", "snugd.db-wal"} {
		b, err := os.ReadFile(filepath.Join(s.dataDir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the invitation", name)
		}
	}
}

// newVerifier returns a fresh RFC 7636 verifier and its S256 challenge.
func newVerifier() (verifier, challenge string) {
	vb := make([]byte, 32)
	rand.Read(vb)
	verifier = base64.RawURLEncoding.EncodeToString(vb)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}
