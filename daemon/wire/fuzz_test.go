package wire

import (
	"bytes"
	"encoding/json"
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
		if generic, err := Parse(raw); err != nil || !reflect.DeepEqual(generic, Frame(r)) {
			t.Fatalf("Parse = %+v, %v, want %+v", generic, err, r)
		}
	})
}

// FuzzParseOpenURLRequest: no panic; accepted URLs are https without
// userinfo and round-trip.
func FuzzParseOpenURLRequest(f *testing.F) {
	for _, s := range []string{
		`{"type":"snug:open-url-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://example.com/a?b#c"}`,
		`{"type":"snug:open-url-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://u@example.com/","target":"_blank"}`,
		`{"type":"snug:open-url-request","v":1,"requestId":"r1","instanceId":"i1","url":"HTTPS://[::1]:8443/"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := ParseOpenURLRequest(raw)
		if err != nil {
			checkParseError(t, raw, err)
			return
		}
		lower := strings.ToLower(r.URL)
		if !strings.HasPrefix(lower, "https://") || strings.Contains(rawAuthority(r.URL, len("https")), "@") {
			t.Fatalf("accepted url %q", r.URL)
		}
		b, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := ParseOpenURLRequest(b); err != nil || again != r {
			t.Fatalf("round trip: %+v, %v, want %+v", again, err, r)
		}
	})
}

// FuzzParse: generic dispatch. No panic; an accepted frame re-encodes to
// bytes that parse back to the same encoding; Ignored only for v 1 and an
// unknown snug:* type; refusals keep their promises.
func FuzzParse(f *testing.F) {
	netSeeds(f)
	for _, fr := range sampleFrames(f) {
		b, _ := Encode(fr)
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"type":"snug:future","requestId":"r"}`))
	f.Add([]byte(`{"type":"snug:app-response","v":1,"requestId":"r","ok":false,"error":{"code":"PARSE_FAILED","message":"m","retryable":true,"rawExcerpt":"x","attemptsRemaining":2}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fr, err := Parse(raw)
		if err != nil {
			checkParseError(t, raw, err)
			return
		}
		if ig, ok := fr.(Ignored); ok {
			if !strings.HasPrefix(ig.Type, "snug:") {
				t.Fatalf("ignored non-snug type %q", ig.Type)
			}
			for _, known := range FrameTypes() {
				if ig.Type == known {
					t.Fatalf("ignored known type %q", ig.Type)
				}
			}
			return
		}
		if len(raw) > FrameLimit(fr.FrameType()) {
			t.Fatalf("accepted %d bytes of %s", len(raw), fr.FrameType())
		}
		if nr, ok := fr.(NetRequest); ok {
			for name := range nr.Headers {
				if CredentialHeader(name) {
					t.Fatalf("accepted STRIP header %q", name)
				}
			}
		}
		if nr, ok := fr.(NetResponse); ok {
			for name := range nr.Headers {
				if !AllowedResponseHeader(name) {
					t.Fatalf("accepted response header %q", name)
				}
			}
		}
		// Received host-events and app-events are not sendable as they
		// came (R7): they go out only rebuilt.
		switch e := fr.(type) {
		case HostEvent:
			r, ok := RebuildHostEvent(e)
			if !ok {
				return
			}
			fr = r
		case AppEvent:
			r, ok := RebuildAppEvent(e)
			if !ok {
				return
			}
			fr = r
		}
		b, err := Encode(fr)
		if err != nil {
			if resp, ok := fr.(AppResponse); ok && resp.Error != nil {
				return // a reserved code may be received but is never sent
			}
			if resp, ok := fr.(NetResponse); ok && resp.Error != nil {
				return
			}
			if resp, ok := fr.(DBResponse); ok && resp.Error != nil {
				return
			}
			t.Fatalf("Encode(%+v) = %v", fr, err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Encode(frame)) = %v for %s", err, b)
		}
		b2, err := Encode(again)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("Encode is not stable: %s then %s (%v)", b, b2, err)
		}
	})
}

// FuzzDetectEnvelope: no panic; a detected envelope starts with the tag
// and carries snug 1, and rebuilding it detects the same envelope.
func FuzzDetectEnvelope(f *testing.F) {
	f.Add(EnvelopeTag + "\n" + `{"snug":1,"appId":"a","instanceId":"i","requestId":"r","action":"x","payload":{"a":[1]}}`)
	f.Add(EnvelopeTag + "\n" + `{"snug":2,"appId":"a","instanceId":"i","requestId":"r","action":"x"}`)
	f.Add("hello " + EnvelopeTag + "\n{}")
	f.Fuzz(func(t *testing.T, msg string) {
		e, ok := DetectEnvelope(msg)
		if !ok {
			return
		}
		if !strings.HasPrefix(msg, EnvelopeTag+"\n{") {
			t.Fatalf("detected %q without the tag", msg)
		}
		var probe struct {
			Snug json.Number `json:"snug"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(msg, EnvelopeTag+"\n")), &probe); err != nil {
			t.Fatalf("detected an envelope encoding/json rejects: %v", err)
		}
		if f, _ := probe.Snug.Float64(); f != 1 {
			t.Fatalf("detected snug %q", probe.Snug)
		}
		s, err := BuildEnvelope(e)
		if err != nil {
			t.Fatalf("BuildEnvelope(detected) = %v", err)
		}
		again, ok := DetectEnvelope(s)
		if !ok {
			t.Fatalf("DetectEnvelope(BuildEnvelope(e)) = false for %q", s)
		}
		if s2, _ := BuildEnvelope(again); s2 != s {
			t.Fatalf("envelope not stable: %q then %q", s, s2)
		}
	})
}

// FuzzParseAgentReply: no panic; a reply object is a JSON object that
// appears in the reply; a reply that is itself valid non-object JSON is
// rejected; the excerpt of a failure is at most 200 characters.
func FuzzParseAgentReply(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{\"a\":1}\n```", `x {"a":"}"} y`, `[{"a":1}]`, "null", `{"a":"\"}`, "{{{{{{{{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, ok := ParseAgentReply(text)
		var b ParseBudget
		_, err := b.Parse(text)
		if ok != (err == nil) {
			t.Fatalf("ParseAgentReply ok=%t but budget Parse err=%v", ok, err)
		}
		if !ok {
			if ex := ErrorBodyOf(err).RawExcerpt; utf8.RuneCountInString(ex) > MaxRawExcerpt || !utf8.ValidString(ex) {
				t.Fatalf("rawExcerpt %q", ex)
			}
			return
		}
		var m map[string]any
		if err := json.Unmarshal(r.Object, &m); err != nil || m == nil {
			t.Fatalf("reply object %q is not a JSON object: %v", r.Object, err)
		}
		if utf8.ValidString(text) && !strings.Contains(text, string(r.Object)) {
			t.Fatalf("reply object %q does not appear in the reply", r.Object)
		}
		trimmed := strings.TrimSpace(text)
		if json.Valid([]byte(trimmed)) && (trimmed == "" || trimmed[0] != '{') {
			t.Fatalf("accepted %q, which is valid JSON but not an object", text)
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
