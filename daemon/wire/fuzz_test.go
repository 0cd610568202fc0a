package wire

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// checkParseError asserts what every refusal promises: a code, a safe
// message, and a recovered requestId that is empty or a plausible id.
func checkParseError(t *testing.T, raw []byte, err error) *ParseError {
	t.Helper()
	pe := parseErr(t, err)
	if n := utf8.RuneCountInString(pe.RequestID); pe.RequestID != "" && (n < 1 || n > MaxIDChars) {
		t.Fatalf("recovered RequestID %q of %d characters", pe.RequestID, n)
	}
	if pe.Code == "" || pe.Message == "" {
		t.Fatalf("ParseError %+v lacks a code or a message", pe)
	}
	if a, ok := pe.Answer(); ok {
		if pe.RequestID == "" {
			t.Fatal("an answer without a recovered requestId")
		}
		if _, err := Encode(a); err != nil {
			t.Fatalf("Encode(answer %+v) = %v", a, err)
		}
	}
	return pe
}

func netSeeds(f *testing.F) {
	for _, s := range []string{
		`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://api.example.com/x","method":"GET"}`,
		`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"snug-connection://hue/x","method":"POST","headers":{"Content-Type":"application/json","X_Api_Key":"k"},"body":"{}"}`,
		`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://@h:0443/\\","method":"PUT","headers":{"A":"1","a":"2"},"body":"\ud800"}`,
		`{"type":"snug:net-request","v":2,"requestId":"abc","appId":"x"}`,
		`{"type":"snug:net-request","v":1,"requestId":"r","requestId":"s","\u0075rl":"x"}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParseNetRequest: no panic; an accepted request re-serializes and
// re-parses to the same value and never carries a credential-shaped or
// transport header; a refusal's requestId is 1–128 characters or empty.
func FuzzParseNetRequest(f *testing.F) {
	netSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := ParseNetRequest(raw)
		if err != nil {
			pe := checkParseError(t, raw, err)
			if pe.Code != errcode.NetInvalidRequest && pe.Code != errcode.UnsupportedVersion {
				t.Fatalf("code %s, want NET_INVALID_REQUEST or UNSUPPORTED_VERSION", pe.Code)
			}
			return
		}
		for name, value := range r.Headers {
			if CredentialHeader(name) || reservedHeader(name) || !isToken(name) || strings.ContainsAny(value, "\r\n\x00") {
				t.Fatalf("accepted header %q: %q", name, value)
			}
		}
		if r.HasBody && (r.Method == "GET" || r.Method == "HEAD") {
			t.Fatalf("accepted a body on %s", r.Method)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted request fails Validate: %v", err)
		}
		b, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode(accepted) = %v", err)
		}
		again, err := ParseNetRequest(b)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %+v, %v, want %+v", again, err, r)
		}
	})
}

// FuzzScanObject: the scanner agrees with encoding/json.
func FuzzScanObject(f *testing.F) {
	for _, s := range scannerSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkScanner(t, raw)
	})
}
