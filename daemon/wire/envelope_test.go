package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// TestEnvelopeRoundTrip: the wire form and its detection.
//
// conformance: P1-ENV6-01, P1-R1-02
func TestEnvelopeRoundTrip(t *testing.T) {
	m := AppMessage{RequestID: "r1", InstanceID: "i1", AppID: "com.example.todo", Action: "plan", Payload: json.RawMessage(`{"day":"mon"}`), State: json.RawMessage(`[1,2]`), ResponseSchema: json.RawMessage(`{"type":"object"}`)}
	s, err := BuildEnvelope(EnvelopeFor(m))
	if err != nil {
		t.Fatal(err)
	}
	want := "[SNUG_APP_REQUEST]\n" + `{"snug":1,"appId":"com.example.todo","instanceId":"i1","requestId":"r1","action":"plan","payload":{"day":"mon"},"state":[1,2],"responseSchema":{"type":"object"}}`
	if s != want {
		t.Errorf("BuildEnvelope() = %q, want %q", s, want)
	}
	e, ok := DetectEnvelope(s)
	if !ok || !reflect.DeepEqual(e, EnvelopeFor(m)) {
		t.Errorf("DetectEnvelope(BuildEnvelope(e)) = %+v, %t, want %+v", e, ok, EnvelopeFor(m))
	}
	if _, err := BuildEnvelope(Envelope{AppID: "a", InstanceID: "i", RequestID: "r", Action: strings.Repeat("x", 129)}); err == nil {
		t.Error("BuildEnvelope(129-character action) = nil error")
	}
}

// TestDetectEnvelopeNeedsBothSignals: ordinary chat that quotes the tag is
// never an app request.
//
// conformance: P1-ENV6-02
func TestDetectEnvelopeNeedsBothSignals(t *testing.T) {
	body := `{"snug":1,"appId":"a","instanceId":"i","requestId":"r","action":"x"}`
	if _, ok := DetectEnvelope(EnvelopeTag + "\n" + body); !ok {
		t.Fatal("DetectEnvelope(valid) = false")
	}
	for _, msg := range []string{
		body,                                 // no tag
		EnvelopeTag + body,                   // no newline
		EnvelopeTag + "\r\n" + body,          // another newline
		" " + EnvelopeTag + "\n" + body,      // tag not first
		"Look: " + EnvelopeTag + "\n" + body, // quoted in prose
		EnvelopeTag + "\n" + strings.Replace(body, `"snug":1`, `"snug":2`, 1),
		EnvelopeTag + "\n" + strings.Replace(body, `"snug":1`, `"snug":"1"`, 1),
		EnvelopeTag + "\n" + strings.Replace(body, `"snug":1,`, ``, 1),
		EnvelopeTag + "\n" + strings.Replace(body, `"snug":1`, `"snug":1,"snug":2`, 1),
		EnvelopeTag + "\n",
		EnvelopeTag + "\nnot json",
		EnvelopeTag + "\n" + body + " trailing",
		EnvelopeTag + "\n[" + body + "]",
		EnvelopeTag + "\n" + strings.Replace(body, `"action":"x"`, `"action":""`, 1),
		EnvelopeTag + "\n" + strings.Replace(body, `"requestId":"r",`, ``, 1),
		"[snug_app_request]\n" + body,
	} {
		if e, ok := DetectEnvelope(msg); ok {
			t.Errorf("DetectEnvelope(%q) = %+v, true, want ordinary chat", msg, e)
		}
	}
}

// TestParseAgentReplyGraduated: raw parse, then fenced block, then a
// balanced object extracted from prose, string-aware.
//
// conformance: P1-ENV6-06
func TestParseAgentReplyGraduated(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		obj   string
		stage ReplyStage
	}{
		{"raw", `{"message":"hi","items":[1]}`, `{"message":"hi","items":[1]}`, ReplyRaw},
		{"raw with whitespace", "\n  {\"a\":1}\n", `{"a":1}`, ReplyRaw},
		{"fenced json", "Here you go:\n```json\n{\"a\":1}\n```\nDone.", `{"a":1}`, ReplyFenced},
		{"fenced bare", "```\n{\"a\":2}\n```", `{"a":2}`, ReplyFenced},
		{"second fence", "```\nnot json\n```\nthen\n```json\n{\"b\":1}\n```", `{"b":1}`, ReplyFenced},
		{"prose wrapped", `Sure! {"message":"ok"} Hope that helps.`, `{"message":"ok"}`, ReplyExtracted},
		{"braces in strings", `Note {"text":"a } b { c","n":{"m":"}"}} end`, `{"text":"a } b { c","n":{"m":"}"}}`, ReplyExtracted},
		{"escaped quote in string", `x {"q":"say \"}\" now"} y`, `{"q":"say \"}\" now"}`, ReplyExtracted},
		{"first candidate invalid", `{not json} and {"a":1}`, `{"a":1}`, ReplyExtracted},
		{"unbalanced outer", `{ {"a":1}`, `{"a":1}`, ReplyExtracted},
		{"fence without closing falls through", "```json\n{\"a\":1}", `{"a":1}`, ReplyExtracted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := ParseAgentReply(tc.reply)
			if !ok || string(r.Object) != tc.obj || r.Stage != tc.stage {
				t.Errorf("ParseAgentReply(%q) = %s (stage %d), %t, want %s (stage %d)", tc.reply, r.Object, r.Stage, ok, tc.obj, tc.stage)
			}
		})
	}
}

// TestParseAgentReplyRejects: null, arrays and scalars are rejected where
// they parse; no object is dug out of them.
//
// conformance: P1-ENV6-07
func TestParseAgentReplyRejects(t *testing.T) {
	for _, reply := range []string{
		"null", "[]", "3", `"text"`, "true", `[{"a":1}]`, " null ",
		"```json\n[{\"a\":1}]\n```",
		"```json\nnull\n```\n{\"a\":1}",
		"", "plain prose", "{", "}{", `{"a":}`,
	} {
		if r, ok := ParseAgentReply(reply); ok {
			t.Errorf("ParseAgentReply(%q) = %s, true, want rejected", reply, r.Object)
		}
	}
}

// TestParseBudget: PARSE_FAILED with rawExcerpt ≤ 200 and
// attemptsRemaining; three consecutive failures exhaust the budget until
// an explicit reset; a success resets the count.
//
// conformance: P1-ENV6-08, P1-R6-08, P1-R6-09
func TestParseBudget(t *testing.T) {
	var b ParseBudget
	long := strings.Repeat("é", 500)
	for i, want := range []int{2, 1, 0} {
		_, err := b.Parse(long)
		re, ok := errors.AsType[*ReplyError](err)
		if !ok || re.AttemptsRemaining != want {
			t.Fatalf("failure %d: %v, want attemptsRemaining %d", i+1, err, want)
		}
		body := ErrorBodyOf(err)
		if body.Code != errcode.ParseFailed || utf8.RuneCountInString(body.RawExcerpt) != MaxRawExcerpt || body.AttemptsRemaining != want || body.Retryable != (want > 0) {
			t.Errorf("failure %d: body = %+v", i+1, body)
		}
		frame := AppErrorResponse("r1", err)
		enc, err := Encode(frame)
		if err != nil {
			t.Fatal(err)
		}
		e := decodeMap(t, enc)["error"].(map[string]any)
		if _, ok := e["rawExcerpt"]; !ok || e["attemptsRemaining"] != float64(want) {
			t.Errorf("failure %d: frame %s lacks rawExcerpt or attemptsRemaining", i+1, enc)
		}
	}
	if b.Allow() || b.Remaining() != 0 {
		t.Error("after three failures Allow() = true, want the budget exhausted")
	}
	if _, err := b.Parse(`{"a":1}`); err == nil {
		t.Error("an exhausted budget accepted a reply: only an explicit reset restores it")
	}
	b.Reset()
	if !b.Allow() || b.Remaining() != ParseFailureBudget {
		t.Error("Reset() did not restore the budget")
	}
	b.Parse("nope")
	b.Parse("nope")
	if r, err := b.Parse(`{"ok":true}`); err != nil || string(r.Object) != `{"ok":true}` {
		t.Fatalf("Parse(valid) = %v", err)
	}
	if b.Remaining() != ParseFailureBudget {
		t.Errorf("after a success Remaining() = %d, want %d", b.Remaining(), ParseFailureBudget)
	}
	if _, err := b.Parse("a\xffb"); err == nil {
		t.Fatal("Parse(invalid) = nil")
	} else if ex := ErrorBodyOf(err).RawExcerpt; !utf8.ValidString(ex) {
		t.Errorf("rawExcerpt %q is not valid UTF-8", ex)
	}
	if errors.Is(&ReplyError{}, errcode.ParseFailed) != true {
		t.Error("ReplyError is not PARSE_FAILED")
	}
}

func TestParseBudgetConcurrent(t *testing.T) {
	var b ParseBudget
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				b.Parse("x")
				b.Allow()
			}
		})
	}
	wg.Wait()
	if b.Allow() {
		t.Error("budget not exhausted after 80 failures")
	}
}

// TestParseAgentReplyExtractionBound: extraction tries at most
// maxExtractStarts opening braces, so a reply full of braces costs a
// bounded number of scans.
func TestParseAgentReplyExtractionBound(t *testing.T) {
	within := strings.Repeat("{x} ", maxExtractStarts-1) + `{"a":1}`
	if r, ok := ParseAgentReply(within); !ok || string(r.Object) != `{"a":1}` {
		t.Errorf("ParseAgentReply(%d bad candidates, then an object) = %s, %t, want the object", maxExtractStarts-1, r.Object, ok)
	}
	beyond := strings.Repeat("{x} ", maxExtractStarts) + `{"a":1}`
	if r, ok := ParseAgentReply(beyond); ok {
		t.Errorf("ParseAgentReply(%d bad candidates, then an object) = %s, want no object: extraction gives up", maxExtractStarts, r.Object)
	}
}
