package requirement

import (
	"testing"
)

// TestParseProviderName is the provider-name confusable guard and its stated
// limits: non-ASCII look-alikes are refused, pure-ASCII look-alikes pass.
//
// conformance: P3-C12.6-01, P3-C12.6-02, P3-C12.6-03
func TestParseProviderName(t *testing.T) {
	for _, name := range []string{"Spotify", "5potify", "C0inbase", "AT&T", "Coinbase Exchange", "a", " ~!#$%()*+,-./:;=?@[]^_`{|}~"[1:]} {
		t.Run("accepts "+name, func(t *testing.T) {
			r := checkAccepted(t, baseDoc, set("provider.name", name), Options{})
			if r.Provider.Name != name {
				t.Errorf("Provider.Name = %q, want %q", r.Provider.Name, name)
			}
		})
	}
	refused := []struct {
		name, in, rule string
	}{
		{"cyrillic dze", "ѕpotify", RuleTextASCII},
		{"cyrillic o", "Cоinbase", RuleTextASCII},
		{"greek omicron", "Cοinbase", RuleTextASCII},
		{"fullwidth", "Ｓｐｏｔｉｆｙ", RuleTextASCII},
		{"zero-width space", "Spo\u200btify", RuleTextASCII},
		{"zero-width joiner", "Spo\u200dtify", RuleTextASCII},
		{"bidi override", "\u202eyfitopS", RuleTextASCII},
		{"bidi isolate", "Spotify\u2066", RuleTextASCII},
		{"byte order mark", "\ufeffSpotify", RuleTextASCII},
		{"decomposed accent (not NFC, not ASCII)", "Cafe\u0301", RuleTextASCII},
		{"composed accent", "Café", RuleTextASCII},
		{"no-break space", "Spot\u00a0ify", RuleTextASCII},
		{"tab", "Spot\tify", RuleTextASCII},
		{"newline", "Spotify\n", RuleTextASCII},
		{"del", "Spotify\x7f", RuleTextASCII},
		{"leading space", " Spotify", RuleTextWhitespace},
		{"trailing space", "Spotify ", RuleTextWhitespace},
		{"double space", "Coinbase  Exchange", RuleTextWhitespace},
		{"markup", "<b>Spotify</b>", RuleTextMarkup},
		{"empty", "", RuleStringEmpty},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			checkRefused(t, baseDoc, set("provider.name", tc.in), Options{}, "provider.name", tc.rule)
		})
	}
}

// TestParsePlainText: free-text seats refuse invisible characters and
// non-NFC text; the prose seats also refuse markup, and the
// placeholder keeps its angle brackets.
func TestParsePlainText(t *testing.T) {
	prose := []struct {
		base func() doc
		mut  func(string) func(doc)
		path string
	}{
		{baseDoc, func(s string) func(doc) { return set("registration.instructions", []any{s}) }, "registration.instructions[0]"},
		{baseDoc, func(s string) func(doc) { return field(0, "label", s) }, "fields[0].label"},
		{baseDoc, func(s string) func(doc) { return field(0, "description", s) }, "fields[0].description"},
		{lanDoc, func(s string) func(doc) { return set("lanHost.label", s) }, "lanHost.label"},
	}
	accepted := []string{
		"Open Settings > API and create a key.",
		"Open https://home.openweathermap.org/api_keys and copy the key.",
		"R&D keys work too; a < b, <3",
		"Wählen Sie „Schlüssel erstellen“.",
		"日本語の説明",
		"Use metadata: yes",
		"Press [Create] then (Copy).",
	}
	refusedMarkup := []string{
		"<b>Step</b>", "Click <a href=\"https://evil.example\">here</a>", "</div>", "<!-- x -->", "<?xml version=\"1.0\"?>",
		"<img src=x onerror=alert(1)>", "&lt;b&gt;", "&#60;b&#62;", "&#x3c;b", "[Open the console](https://evil.example)",
		"![logo](https://evil.example/x.png)", "[1]: https://evil.example", "javascript:alert(1)", "JavaScript:void(0)",
		"vbscript:msgbox", "data:text/html;base64,PHNjcmlwdD4=",
	}
	refusedChars := []struct{ in, rule string }{
		{"Step\none", RuleTextControl},
		{"Step\x00", RuleTextControl},
		{"Step\u0085", RuleTextControl},
		{"Step\u2028two", RuleTextControl},
		{"Spo\u200btify", RuleTextControl},
		{"\u202eevil", RuleTextControl},
		{"\u00adsoft", RuleTextControl},
		{"private \ue000", RuleTextControl},
		{"tag \U000E0041", RuleTextControl},
		{"nonchar \ufffe", RuleTextControl},
		{" leading", RuleTextWhitespace},
		{"trailing\u3000", RuleTextWhitespace},
		{"Cafe\u0301", RuleTextNFC},
	}
	for _, seat := range prose {
		for _, s := range accepted {
			t.Run(seat.path+" accepts "+s, func(t *testing.T) {
				checkAccepted(t, seat.base, seat.mut(s), Options{})
			})
		}
		for _, s := range refusedMarkup {
			t.Run(seat.path+" refuses "+s, func(t *testing.T) {
				checkRefused(t, seat.base, seat.mut(s), Options{}, seat.path, RuleTextMarkup)
			})
		}
		for _, c := range refusedChars {
			t.Run(seat.path+" refuses "+c.in, func(t *testing.T) {
				checkRefused(t, seat.base, seat.mut(c.in), Options{}, seat.path, c.rule)
			})
		}
	}
	t.Run("placeholder keeps angle brackets", func(t *testing.T) {
		checkAccepted(t, baseDoc, field(0, "placeholder", "<your API key>"), Options{})
	})
	t.Run("placeholder refuses invisible characters", func(t *testing.T) {
		checkRefused(t, baseDoc, field(0, "placeholder", "key\u200b"), Options{}, "fields[0].placeholder", RuleTextControl)
	})
	t.Run("authorize param value refuses control characters", func(t *testing.T) {
		checkRefused(t, oauthDoc, set("authorizeParams", doc{"prompt": "a\r\nb"}), Options{}, "authorizeParams.prompt", RuleTextControl)
	})
}
