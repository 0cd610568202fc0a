package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHintConstructors: a hint carries references only.
//
// conformance: P1-R7-01, P1-R2-03
func TestHintConstructors(t *testing.T) {
	e, err := ConnectionEvent("hue")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"snug:host-event","v":1,"event":"connection-event","data":{"slot":"hue"}}`; string(b) != want {
		t.Errorf("Encode(ConnectionEvent(hue)) = %s, want %s", b, want)
	}
	// Anything that is not reference-shaped is refused: content, prose,
	// JSON, a token that would smuggle a credential.
	for _, slot := range []string{"", "two words", `{"body":"x"}`, "Bearer sk-1", strings.Repeat("s", 129), "a\nb", "ü"} {
		if e, err := ConnectionEvent(slot); err == nil {
			t.Errorf("ConnectionEvent(%q) = %+v, want an error", slot, e)
		}
	}
	for _, theme := range []string{"", "dark mode", strings.Repeat("t", 33)} {
		if _, err := ThemeChange(theme); err == nil {
			t.Errorf("ThemeChange(%q) = nil error", theme)
		}
	}
	for _, h := range []int{-1, maxResizeHeight + 1} {
		if _, err := Resize(h); err == nil {
			t.Errorf("Resize(%d) = nil error", h)
		}
	}
	th, _ := ThemeChange("dark")
	rs, _ := Resize(0)
	known := map[string]bool{EventConnection: true, EventThemeChange: true, EventVisibility: true, EventResize: true}
	for _, f := range []Frame{e, th, Visibility(true), Visibility(false), rs} {
		b, err := Encode(f)
		if err != nil {
			t.Fatalf("Encode(%+v) = %v", f, err)
		}
		m := decodeMap(t, b)
		if !known[m["event"].(string)] {
			t.Errorf("Encode(%+v) minted event %v", f, m["event"])
		}
		if _, has := m["instanceId"]; has {
			t.Errorf("Encode(%+v) = %s carries an instanceId", f, b)
		}
	}
}

// TestRebuildHint: a hint received from a sender is rebuilt field by
// field; nothing the sender added survives, and only hints built by
// their constructors are sent.
//
// conformance: P1-R7-02, P1-R7-01, P1-R2-03
func TestRebuildHint(t *testing.T) {
	src := `{"type":"snug:host-event","v":1,"event":"connection-event","instanceId":"stale","data":{"slot":"hue","token":"sk-live-1","body":"{\"lights\":[]}","slot ":"x"}}`
	f, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	in := f.(HostEvent)
	if _, err := Encode(in); err == nil {
		t.Error("Encode(received hint with extra fields) = nil error, want a refusal: hints are rebuilt, never relayed")
	}
	out, ok := RebuildHostEvent(in)
	if !ok {
		t.Fatal("RebuildHostEvent = false")
	}
	b, err := Encode(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"snug:host-event","v":1,"event":"connection-event","data":{"slot":"hue"}}`; string(b) != want {
		t.Errorf("rebuilt hint = %s, want %s", b, want)
	}
	for _, leak := range []string{"sk-live-1", "lights", "stale"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("rebuilt hint %s relays %q", b, leak)
		}
	}
	drop := []HostEvent{
		{Event: "foo-bar", Data: json.RawMessage(`{"x":1}`)},
		{Event: EventConnection},
		{Event: EventConnection, Data: json.RawMessage(`{"slot":"has space"}`)},
		{Event: EventConnection, Data: json.RawMessage(`{"slot":1}`)},
		{Event: EventVisibility, Data: json.RawMessage(`{"visible":"yes"}`)},
		{Event: EventThemeChange, Data: json.RawMessage(`[1]`)},
	}
	for _, e := range drop {
		if r, ok := RebuildHostEvent(e); ok {
			t.Errorf("RebuildHostEvent(%s %s) = %+v, true, want dropped", e.Event, e.Data, r)
		}
	}
	v, ok := RebuildHostEvent(HostEvent{Event: EventVisibility, Data: json.RawMessage(`{"visible":false,"extra":1}`)})
	if !ok || string(v.Data) != `{"visible":false}` {
		t.Errorf("RebuildHostEvent(visibility) = %s, %t", v.Data, ok)
	}
	a, ok := RebuildAppEvent(AppEvent{Event: EventResize, Data: json.RawMessage(`{"height":240.0,"html":"<script>"}`)})
	if !ok || string(a.Data) != `{"height":240}` {
		t.Errorf("RebuildAppEvent(resize) = %s, %t", a.Data, ok)
	}
	if _, ok := RebuildAppEvent(AppEvent{Event: "foo-bar"}); ok {
		t.Error("RebuildAppEvent(unknown) = true")
	}
}

// TestUnknownEventsParse: an unknown event name is not an error; the
// receiver ignores it (RebuildHostEvent reports false).
//
// conformance: P1-F2-16, P1-R7-05
func TestUnknownEventsParse(t *testing.T) {
	for _, raw := range []string{
		`{"type":"snug:host-event","v":1,"event":"foo-bar"}`,
		`{"type":"snug:app-event","v":1,"event":"foo-bar","data":{"x":1}}`,
	} {
		f, err := Parse([]byte(raw))
		if err != nil {
			t.Errorf("Parse(%s) = %v, want nil", raw, err)
			continue
		}
		if e, isHost := f.(HostEvent); isHost {
			if _, ok := RebuildHostEvent(e); ok {
				t.Errorf("RebuildHostEvent(foo-bar) = true, want the event ignored")
			}
		}
	}
	b, _ := Schema(TypeHostEvent)
	if strings.Contains(string(b), "instanceId\":") {
		t.Errorf("host-event schema declares an instanceId")
	}
}
