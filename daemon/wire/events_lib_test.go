package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Moved from events.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// FrameType returns TypeHostEvent.
func (HostEvent) FrameType() string { return TypeHostEvent }

// FrameType returns TypeAppEvent.
func (AppEvent) FrameType() string { return TypeAppEvent }

// MarshalJSON writes {type, v, event, data?}.
func (e HostEvent) MarshalJSON() ([]byte, error) {
	return marshal(eventJSON{TypeHostEvent, protocolVersion, e.Event, e.Data})
}

// MarshalJSON writes {type, v, event, data?}.
func (e AppEvent) MarshalJSON() ([]byte, error) {
	return marshal(eventJSON{TypeAppEvent, protocolVersion, e.Event, e.Data})
}

// ConnectionEvent is the hint that the app's connection slot changed
// (approved, revoked, re-approved, credentials updated, …). It names the
// slot and nothing else: no status, no response data, no credential; the
// app re-reads what it needs (R7).
func ConnectionEvent(slot string) (HostEvent, error) {
	if p := refProblem("slot", slot); p != "" {
		return HostEvent{}, hintError(EventConnection, p)
	}
	data, err := marshal(struct {
		Slot string `json:"slot"`
	}{slot})
	return HostEvent{Event: EventConnection, Data: data}, err
}

// ThemeChange is the hint that the host's theme changed to the named
// theme (a short token such as "dark").
func ThemeChange(theme string) (HostEvent, error) {
	if p := refProblem("theme", theme); p != "" || len(theme) > maxThemeChars {
		return HostEvent{}, hintError(EventThemeChange, "theme must be a token of at most 32 characters")
	}
	data, err := marshal(struct {
		Theme string `json:"theme"`
	}{theme})
	return HostEvent{Event: EventThemeChange, Data: data}, err
}

// Visibility is the hint that the app became visible or hidden.
func Visibility(visible bool) HostEvent {
	if visible {
		return HostEvent{Event: EventVisibility, Data: json.RawMessage(`{"visible":true}`)}
	}
	return HostEvent{Event: EventVisibility, Data: json.RawMessage(`{"visible":false}`)}
}

// Resize is the app's request that its frame be height CSS pixels tall.
func Resize(height int) (AppEvent, error) {
	if height < 0 || height > maxResizeHeight {
		return AppEvent{}, hintError(EventResize, fmt.Sprintf("height must be 0–%d", maxResizeHeight))
	}
	data, err := marshal(struct {
		Height int `json:"height"`
	}{height})
	return AppEvent{Event: EventResize, Data: data}, err
}

// refProblem checks that s is reference-shaped: 1–128 characters of
// letters, digits and ._:- — an identifier, never prose or data.
func refProblem(field, s string) string {
	if s == "" || len(s) > maxRefChars {
		return fmt.Sprintf("%s must be 1–%d characters", field, maxRefChars)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return field + " must be an identifier (letters, digits, . _ : -)"
		}
	}
	return ""
}

func hintError(event, problem string) error {
	return fmt.Errorf("build %s hint: %s", event, problem)
}

// RebuildHostEvent rebuilds a host-event received from a sender (snugd's
// event stream, another process) field by field from the typed references
// its constructor takes, so nothing the sender added is relayed (R7). It
// reports false for an event this package does not know or whose
// references do not check out: drop it.
func RebuildHostEvent(e HostEvent) (HostEvent, bool) {
	var buf [maxKnownKeys]member
	ms, ok := eventData(e.Data, buf[:0])
	if !ok {
		return HostEvent{}, false
	}
	var out HostEvent
	var err error
	switch e.Event {
	case EventConnection:
		slot, ok := lastString(ms, "slot")
		if !ok {
			return HostEvent{}, false
		}
		out, err = ConnectionEvent(slot)
	case EventThemeChange:
		theme, ok := lastString(ms, "theme")
		if !ok {
			return HostEvent{}, false
		}
		out, err = ThemeChange(theme)
	case EventVisibility:
		v, ok := lastValue(ms, "visible")
		if !ok || (kindOf(v) != kindTrue && kindOf(v) != kindFalse) {
			return HostEvent{}, false
		}
		out = Visibility(kindOf(v) == kindTrue)
	default:
		return HostEvent{}, false
	}
	return out, err == nil
}

// RebuildAppEvent is RebuildHostEvent for app-events.
func RebuildAppEvent(e AppEvent) (AppEvent, bool) {
	var buf [maxKnownKeys]member
	ms, ok := eventData(e.Data, buf[:0])
	if !ok || e.Event != EventResize {
		return AppEvent{}, false
	}
	v, ok := lastValue(ms, "height")
	if !ok {
		return AppEvent{}, false
	}
	h, ok := intValue(v, 0, maxResizeHeight)
	if !ok {
		return AppEvent{}, false
	}
	out, err := Resize(h)
	return out, err == nil
}

// eventData scans an event's data object.
func eventData(data json.RawMessage, buf []member) ([]member, bool) {
	if data == nil {
		return nil, true
	}
	if !utf8.Valid(data) {
		return nil, false
	}
	ms, err := scanObject(data, buf)
	return ms, err == nil
}

func lastValue(ms []member, key string) ([]byte, bool) {
	var v []byte
	for _, m := range ms {
		if string(m.key) == key {
			v = m.val
		}
	}
	return v, v != nil
}

func lastString(ms []member, key string) (string, bool) {
	v, ok := lastValue(ms, key)
	if !ok || kindOf(v) != kindString {
		return "", false
	}
	return stringValue(v), true
}

// Validate reports whether e is a hint this package builds, with exactly
// the data its constructor builds (R7, and R2's reserved event names).
func (e HostEvent) Validate() error {
	if r, ok := RebuildHostEvent(e); !ok || string(r.Data) != string(e.Data) {
		return validationError(TypeHostEvent, "a host-event must be a known hint built by its constructor")
	}
	return nil
}

// Validate reports whether e is an event this package builds, with exactly
// the data its constructor builds.
func (e AppEvent) Validate() error {
	if r, ok := RebuildAppEvent(e); !ok || string(r.Data) != string(e.Data) {
		return validationError(TypeAppEvent, "an app-event must be a known event built by its constructor")
	}
	return nil
}

func decodeEvent(typ string, ms []member) (event string, data json.RawMessage, err error) {
	d := newDecoder(typ)
	var seenEvent bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "event":
			event, seenEvent = d.str(m, "event"), true
		case "data":
			data = d.raw(m, "data", string([]byte{kindObject}), "an object")
		}
	}
	d.require(d.typeSeen, "type")
	d.require(seenEvent, "event")
	if d.problem == "" {
		d.fail(checkLen("event", event, 1, maxEventChars))
	}
	return event, data, d.err()
}

func decodeHostEvent(ms []member) (HostEvent, error) {
	event, data, err := decodeEvent(TypeHostEvent, ms)
	if err != nil {
		return HostEvent{}, err
	}
	return HostEvent{Event: event, Data: data}, nil
}

func decodeAppEvent(ms []member) (AppEvent, error) {
	event, data, err := decodeEvent(TypeAppEvent, ms)
	if err != nil {
		return AppEvent{}, err
	}
	return AppEvent{Event: event, Data: data}, nil
}

// The event names this package builds (§2's open additive channel). Other
// names parse, and their receivers ignore them (P1-F2-16); the snug: type
// prefix and the event namespaces are reserved (R2), so nothing here mints
// a name outside this list.
const (
	EventConnection  = "connection-event" // host → app: {slot}
	EventThemeChange = "theme-change"     // host → app: {theme}
	EventVisibility  = "visibility"       // host → app: {visible}
	EventResize      = "resize"           // app → host: {height}
)

// HostEvent is snug:host-event: a host-initiated push. R7: it is a hint,
// a doorbell and not a delivery. It carries references, never content; it
// rides the 256 KiB class, an oversized one is dropped silently, and it
// has no instanceId, so a stale sender looks like a live one. The app
// answers a hint with its own governed reads.
//
// Build one with a hint constructor (ConnectionEvent, ThemeChange,
// Visibility) and forward one received from elsewhere only through
// RebuildHostEvent: Encode refuses a HostEvent whose data is not exactly
// what its constructor builds.
type HostEvent struct {
	Event string
	Data  json.RawMessage // an object of references, or nil
}

// AppEvent is snug:app-event: an app-initiated event on the same channel.
// A host forwards one only through RebuildAppEvent.
type AppEvent struct {
	Event string
	Data  json.RawMessage
}

type eventJSON struct {
	Type  string          `json:"type"`
	V     int             `json:"v"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data,omitempty"`
}

const (
	maxThemeChars   = 32
	maxResizeHeight = 1 << 20
	maxRefChars     = MaxIDChars
)
