package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/internal/testutil"
)

// conformance: P3-C13-01, P3-C13-02, P3-C12-05, P3-C12-06, P3-C12-07, P3-C12-02
func TestSetCredentials(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	err := d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": "k"})
	testutil.WantCode(t, err, errcode.ConnectionNotFound)

	approved(t, d, "app", req("wx", "api.example.com"))
	const secret = "sk-live-value-0123456789abcdef"
	if err := d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": secret}); err != nil {
		t.Fatalf("SetCredentials: %v", err)
	}
	s, err := d.grants.SlotSecrets(ctx, "app", "wx")
	if err != nil || string(s["api_key"]) != secret {
		t.Fatalf("slot secrets = %v, %v", s, err)
	}
	state, ok, err := d.grants.ConnectionState(ctx, "app", "wx")
	if err != nil || !ok || state.Status != grants.ConnConnected || state.ObtainedAt == nil {
		t.Fatalf("state = %+v, %v, %v; want connected", state, ok, err)
	}
	// The value is in no row of the grant or requirement, and the database
	// holds it only sealed.
	c, _ := d.grants.Connection(ctx, "app", "wx")
	if strings.Contains(c.RequirementJSON+strings.Join(c.AllowedHosts, ""), secret) {
		t.Fatal("a credential value reached the connection row")
	}
	d.store.Close()
	for _, name := range []string{"snugd.db", "snugd.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(d.DataDir(), name))
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("%s holds the credential in plaintext", name)
		}
	}
}

func TestSetCredentialsRefusals(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	cases := []struct {
		name   string
		values map[string]string
		code   errcode.Code
	}{
		{"none", map[string]string{}, errcode.BadRequest},
		{"undeclared field", map[string]string{"other": "v"}, errcode.FieldUnknown},
		{"state key", map[string]string{"_connection": `{"status":"connected"}`}, errcode.FieldUnknown},
		{"empty value", map[string]string{"api_key": ""}, errcode.BadRequest},
		{"NUL", map[string]string{"api_key": "a\x00b"}, errcode.BadRequest},
		{"not UTF-8", map[string]string{"api_key": "\xff"}, errcode.BadRequest},
		{"too long", map[string]string{"api_key": strings.Repeat("a", grants.MaxCredentialBytes+1)}, errcode.BadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := d.grants.SetCredentials(ctx, "app", "wx", tc.values)
			testutil.WantCode(t, err, tc.code)
			for _, v := range tc.values {
				if v != "" && strings.Contains(err.Error(), v) {
					t.Fatalf("error %q echoes the value", err)
				}
			}
		})
	}
	d.grants.Revoke(ctx, "app", "wx")
	testutil.WantCode(t, d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": "v"}), errcode.ConnectionRevoked)
}

// conformance: P3-C13-11, P3-C13-12, P3-C13-14
func TestConnStateStrict(t *testing.T) {
	ok := `{"status":"connected","obtainedAt":1,"expiresIn":3600,"scopesGranted":["a"],"lastError":"x",` +
		`"lanPin":{"fingerprint":"ab","cn":"bridge"},"lanVerifiedAt":2,"linkVerifiedAt":3,"claimVerifiedAt":4}`
	s, err := grants.UnmarshalConnState([]byte(ok))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if *s.LANVerifiedAt != 2 || *s.LinkVerifiedAt != 3 || *s.ClaimVerifiedAt != 4 || s.LANPin.CN != "bridge" {
		t.Fatalf("the three markers must stay separate: %+v", s)
	}
	b, _ := s.Marshal()
	if string(b) != ok {
		t.Fatalf("round trip = %s, want %s", b, ok)
	}
	for _, bad := range []string{
		`{"status":"linked"}`,
		`{"status":"connected","verifiedAt":1}`,
		`{"status":"connected","lanPin":{"cn":"x"}}`,
		`{"status":"connected"} {}`,
		`{}`,
	} {
		if _, err := grants.UnmarshalConnState([]byte(bad)); err == nil {
			t.Errorf("unmarshalConnState(%s) accepted", bad)
		}
	}
}

// The executor's credential cache never serves a value after the write
// that replaced or wiped it has returned.
func TestSecretCacheFollowsWrites(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	read := func() string {
		t.Helper()
		s, err := d.grants.CachedSlotSecrets(ctx, "app", "wx")
		if err != nil {
			t.Fatal(err)
		}
		return string(s["api_key"])
	}
	d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": "one"})
	if got := read(); got != "one" {
		t.Fatalf("first read = %q", got)
	}
	d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": "two"})
	if got := read(); got != "two" {
		t.Fatalf("read after a credential write = %q, want two", got)
	}
	d.grants.Revoke(ctx, "app", "wx")
	if got := read(); got != "" {
		t.Fatalf("read after revoke = %q, want nothing", got)
	}
}
