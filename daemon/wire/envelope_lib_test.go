package wire

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// Moved from envelope.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// EnvelopeFor returns the envelope that carries the app-message m.
func EnvelopeFor(m AppMessage) Envelope {
	return Envelope{
		AppID: m.AppID, InstanceID: m.InstanceID, RequestID: m.RequestID, Action: m.Action,
		Payload: m.Payload, State: m.State, ResponseSchema: m.ResponseSchema,
	}
}

// message is the app-message with e's fields, which share its rules.
func (e Envelope) message() AppMessage {
	return AppMessage{
		RequestID: e.RequestID, InstanceID: e.InstanceID, AppID: e.AppID, Action: e.Action,
		Payload: e.Payload, State: e.State, ResponseSchema: e.ResponseSchema,
	}
}

// BuildEnvelope returns the wire form of e. It fails when e's fields break
// app-message's rules.
func BuildEnvelope(e Envelope) (string, error) {
	if p := e.message().problem(); p != "" {
		return "", validationError(TypeAppMessage, "envelope: "+p)
	}
	b, err := marshal(struct {
		Snug           int             `json:"snug"`
		AppID          string          `json:"appId"`
		InstanceID     string          `json:"instanceId"`
		RequestID      string          `json:"requestId"`
		Action         string          `json:"action"`
		Payload        json.RawMessage `json:"payload,omitempty"`
		State          json.RawMessage `json:"state,omitempty"`
		ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	}{envelopeVersion, e.AppID, e.InstanceID, e.RequestID, e.Action, e.Payload, e.State, e.ResponseSchema})
	if err != nil {
		return "", err
	}
	return EnvelopeTag + "\n" + string(b), nil
}

// DetectEnvelope reports whether msg is an app request, and returns its
// envelope. Detection needs two independent signals (§6): msg starts with
// "[SNUG_APP_REQUEST]\n" directly followed by a JSON object, AND that
// object carries snug: 1. Chat text that merely quotes the tag, carries
// another snug version, or an envelope whose fields break app-message's
// rules is ordinary chat: false.
func DetectEnvelope(msg string) (Envelope, bool) {
	rest, ok := strings.CutPrefix(msg, EnvelopeTag+"\n")
	if !ok || !strings.HasPrefix(rest, "{") || !utf8.ValidString(rest) {
		return Envelope{}, false
	}
	var buf [maxKnownKeys]member
	ms, err := scanObject([]byte(rest), buf[:0])
	if err != nil {
		return Envelope{}, false
	}
	var e Envelope
	snug := false
	d := newDecoder(TypeAppMessage)
	for _, m := range ms {
		switch string(m.key) {
		case "snug":
			f, ok := numberValue(m.val)
			if !ok || f != envelopeVersion {
				return Envelope{}, false
			}
			snug = true
		case "appId":
			e.AppID = d.str(m, "appId")
		case "instanceId":
			e.InstanceID = d.str(m, "instanceId")
		case "requestId":
			e.RequestID = d.str(m, "requestId")
		case "action":
			e.Action = d.str(m, "action")
		case "payload":
			e.Payload = json.RawMessage(m.val)
		case "state":
			e.State = json.RawMessage(m.val)
		case "responseSchema":
			e.ResponseSchema = json.RawMessage(m.val)
		}
	}
	if !snug || d.problem != "" || e.message().problem() != "" {
		return Envelope{}, false
	}
	return e, true
}

// ParseAgentReply finds the JSON object in an agent's reply with the
// graduated tolerance of §6: the raw text, then fenced code blocks in
// order, then a balanced {…} extracted from prose (string-aware, so braces
// inside JSON strings do not count). The first step that yields valid
// JSON decides: null, an array or a scalar is rejected there, never dug
// into. It reports false when no object is found.
func ParseAgentReply(text string) (Reply, bool) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	if obj, decided := decide(strings.TrimSpace(text)); decided {
		return reply(obj, ReplyRaw)
	}
	rest := text
	for {
		block, after, ok := nextFence(rest)
		if !ok {
			break
		}
		if obj, decided := decide(strings.TrimSpace(block)); decided {
			return reply(obj, ReplyFenced)
		}
		rest = after
	}
	if obj, ok := extractObject(text); ok {
		return Reply{Object: json.RawMessage(obj), Stage: ReplyExtracted}, true
	}
	return Reply{}, false
}

// decide reports whether s is valid JSON and, if so, returns it when it is
// an object and "" when it is anything else.
func decide(s string) (obj string, decided bool) {
	if s == "" || !json.Valid([]byte(s)) {
		return "", false
	}
	if s[0] != '{' {
		return "", true
	}
	return s, true
}

func reply(obj string, stage ReplyStage) (Reply, bool) {
	if obj == "" {
		return Reply{}, false
	}
	return Reply{Object: json.RawMessage(obj), Stage: stage}, true
}

// nextFence returns the content of the first ``` fenced block in s (its
// info string, such as "json", dropped) and the text after it.
func nextFence(s string) (block, after string, ok bool) {
	open := strings.Index(s, "```")
	if open < 0 {
		return "", "", false
	}
	body := s[open+3:]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return "", "", false
	}
	body = body[nl+1:]
	end := strings.Index(body, "```")
	if end < 0 {
		return "", "", false
	}
	return body[:end], body[end+3:], true
}

// extractObject returns the first balanced {…} in s that is valid JSON.
func extractObject(s string) (string, bool) {
	start := strings.IndexByte(s, '{')
	for tries := 0; start >= 0 && tries < maxExtractStarts; tries++ {
		if end, ok := balancedEnd(s, start); ok && json.Valid([]byte(s[start:end])) {
			return s[start:end], true
		}
		next := strings.IndexByte(s[start+1:], '{')
		if next < 0 {
			break
		}
		start += 1 + next
	}
	return "", false
}

// balancedEnd returns the end of the object that opens at s[start],
// skipping braces inside JSON strings.
func balancedEnd(s string, start int) (int, bool) {
	depth, inString, escaped := 0, false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// Allow reports whether the thread may send another app request.
func (b *ParseBudget) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures < ParseFailureBudget
}

// Remaining returns how many consecutive failures the thread has left.
func (b *ParseBudget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ParseFailureBudget - b.failures
}

// Reset restores the full budget: the user's explicit reset.
func (b *ParseBudget) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
}

// Parse parses an agent reply (ParseAgentReply) and charges the budget. A
// success resets the count. A failure returns a *ReplyError, whose
// envelope is PARSE_FAILED with rawExcerpt and attemptsRemaining. While
// the budget is exhausted every reply fails without being parsed, so that
// only Reset restores it.
func (b *ParseBudget) Parse(text string) (Reply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures >= ParseFailureBudget {
		return Reply{}, &ReplyError{RawExcerpt: excerpt(text)}
	}
	if r, ok := ParseAgentReply(text); ok {
		b.failures = 0
		return r, nil
	}
	b.failures++
	return Reply{}, &ReplyError{RawExcerpt: excerpt(text), AttemptsRemaining: ParseFailureBudget - b.failures}
}

// excerpt returns the first MaxRawExcerpt characters of text, as valid
// UTF-8.
func excerpt(text string) string {
	return truncateChars(strings.ToValidUTF8(text, "\uFFFD"), MaxRawExcerpt)
}

func (e *ReplyError) Error() string {
	return "parse agent reply: no JSON object"
}

// Is reports whether target is errcode.ParseFailed.
func (e *ReplyError) Is(target error) bool { return target == errcode.ParseFailed }

// ErrorCode returns errcode.ParseFailed.
func (e *ReplyError) ErrorCode() errcode.Code { return errcode.ParseFailed }

// Body returns the PARSE_FAILED envelope.
func (e *ReplyError) Body() ErrorBody {
	return ErrorBody{
		Code:              errcode.ParseFailed,
		Message:           "the agent's reply was not a JSON object",
		Retryable:         e.AttemptsRemaining > 0,
		RawExcerpt:        e.RawExcerpt,
		AttemptsRemaining: e.AttemptsRemaining,
	}
}

// EnvelopeTag opens the chat envelope (§6).
const EnvelopeTag = "[SNUG_APP_REQUEST]"

// envelopeVersion is the envelope's snug marker.
const envelopeVersion = 1

// Envelope is the chat envelope: the tagged message a host sends to its
// own agent endpoint for an app-originated turn. Its wire form is
// "[SNUG_APP_REQUEST]\n" followed by
// {snug: 1, appId, instanceId, requestId, action, payload?, state?,
// responseSchema?}. It is self-contained (state travels in it), so
// servers skip thread history for it.
type Envelope struct {
	AppID          string
	InstanceID     string
	RequestID      string
	Action         string
	Payload        json.RawMessage
	State          json.RawMessage
	ResponseSchema json.RawMessage
}

// ReplyStage says which step of the graduated parse found the reply.
type ReplyStage int

const (
	ReplyRaw       ReplyStage = iota + 1 // the whole reply is a JSON object
	ReplyFenced                          // a fenced code block holds the object
	ReplyExtracted                       // a balanced {…} found inside prose
)

// Reply is an agent reply that holds a JSON object.
type Reply struct {
	Object json.RawMessage // the object, exactly as it appears in the reply
	Stage  ReplyStage
}

// maxExtractStarts bounds balanced-object extraction: each start costs one
// scan of the rest of the reply.
const maxExtractStarts = 32

// ParseBudget counts an agent thread's consecutive reply parse failures.
// A success resets the count; after ParseFailureBudget failures in a row
// the budget is exhausted and only Reset (the user's explicit reset)
// restores it. The zero value is a full budget. It is safe for concurrent
// use.
type ParseBudget struct {
	mu       sync.Mutex
	failures int
}

// ReplyError is an agent reply that held no JSON object. Its envelope
// (Body, ErrorBodyOf) is PARSE_FAILED with rawExcerpt and
// attemptsRemaining; it is retryable while attempts remain.
type ReplyError struct {
	RawExcerpt        string // at most MaxRawExcerpt characters of the reply
	AttemptsRemaining int
}
