package daemon

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/scrub"
)

// conformance: P3-L16-01, P3-L16-02, P3-L16-03, P3-S17-15, P3-C12-08
func TestFacts(t *testing.T) {
	r := newStandingRig(t)
	v := lanReq("hue", "192.168.1.20")
	v["lanHost"] = map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge at 192.168.1.20"}
	v["scopes"] = []any{"lights", "scenes@10.0.0.2"}
	r.connect(t, "app1", v, map[string]string{"username": secretKey})
	r.declare(t, "app1", apiKeyReq("later", "later.example.com"))
	arm(t, r, "T1", nil)
	facts := r.d.records.Facts("app1")
	if len(facts) != 3 {
		t.Fatalf("Facts = %+v, want 3", facts)
	}
	dump := fmt.Sprintf("%+v", facts)
	for _, leak := range []string{secretKey, "Secret", "192.168", "10.0.0.2"} {
		if strings.Contains(dump, leak) {
			t.Errorf("facts carry %q: %s", leak, dump)
		}
	}
	byslot := map[string]grants.Fact{}
	for _, f := range facts {
		byslot[f.Slot] = f
	}
	hue := byslot["hue"]
	if !hue.LAN || len(hue.Hosts) != 0 || hue.Address != "snug-connection://hue/" || !strings.Contains(hue.Label, scrub.PrivateAddressMark) {
		t.Errorf("LAN fact = %+v, want symbolic", hue)
	}
	if chat := byslot["chat"]; !chat.Armed || !reflect.DeepEqual(chat.Hosts, []string{apiHost}) || chat.Provider != "Chat" {
		t.Errorf("chat fact = %+v", chat)
	}
	if later := byslot["later"]; later.Status != grants.StatusDeclared || later.Armed {
		t.Errorf("declared fact = %+v", later)
	}
	if r.d.records.Facts("nobody") != nil {
		t.Error("facts for an unknown app")
	}

	// A long scope list cut in the middle of an address: the scrub comes
	// before the cut, so no three-octet head of it survives.
	w := apiKeyReq("long", "long.example.com")
	w["scopes"] = []any{strings.Repeat("s", 199), strings.Repeat("t", 86) + ",192.168.100.200"}
	r.connect(t, "app1", w, nil)
	for _, f := range r.d.records.Facts("app1") {
		if f.Slot == "long" && (strings.Contains(f.Scopes, "192.168") || len([]rune(f.Scopes)) > grants.MaxScopeSummary) {
			t.Errorf("long scopes = %q (%d runes), want the address scrubbed before the cut", f.Scopes, len([]rune(f.Scopes)))
		}
	}
}

// TestJournal: one metadata-only entry per request; never a credential,
// a credentialed URL, a body or a header value; a connection URL is
// journaled by its slot and symbolic form.
//
// conformance: P3-S17-14, P3-C12.9-05, P3-C12.9-08, P3-C12.9-09
func TestJournal(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{}) })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.resolver.Script("fail.example.com")
	r.connect(t, "app1", apiKeyReq("fail", "fail.example.com"), map[string]string{"api_key": secretKey})
	r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(500)
		w.Write([]byte("upstream broke " + secretKey))
	})
	r.net(t, "app1", frame("GET", "https://api.example.com/x?q=1", map[string]any{"headers": map[string]any{"X-Private": "hdr-value"}}))
	r.net(t, "app1", frame("GET", "snug-connection://ex/y", nil))
	if res, _ := r.net(t, "app1", frame("GET", "https://fail.example.com/", nil)); res.Code != errcode.NetFetchFailed || strings.Contains(string(res.Frame), "Secret") || strings.Contains(string(res.Frame), "appid") {
		t.Errorf("DNS failure answer = %s", res.Frame)
	}
	r.net(t, "app1", frame("GET", "https://evil.example.com/", nil))
	r.net(t, "", frame("GET", "https://api.example.com/", nil)) // no identity: not journaled
	es, err := r.d.records.Journal(t.Context(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 {
		t.Fatalf("Journal = %d entries, want 4: %+v", len(es), es)
	}
	// Newest first.
	want := []struct{ host, outcome, gate, code string }{
		{"evil.example.com", "refused", "grant", string(errcode.NetHostBlocked)},
		{"fail.example.com", "refused", "ssrf", string(errcode.NetFetchFailed)},
		{"snug-connection://ex", "sent", "", ""},
		{apiHost, "sent", "", ""},
	}
	for i, w := range want {
		e := es[i]
		if e.Host != w.host || e.Outcome != w.outcome || e.Gate != w.gate || e.Code != w.code || e.Method != "GET" {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
	}
	if es[3].Status != 500 || es[3].Slot != "ex" || es[2].Slot != "ex" {
		t.Errorf("entries = %+v", es)
	}
	dump := fmt.Sprintf("%+v", es) + r.logs.String()
	for _, leak := range []string{secretKey, "Secret", "appid", "hdr-value", "q=1", "upstream broke"} {
		if strings.Contains(dump, leak) {
			t.Errorf("journal or log carries %q", leak)
		}
	}
	if _, err := r.d.records.Journal(t.Context(), journal.JournalQuery{Limit: 5000}); !errorsIsCode(err, errcode.BadRequest) {
		t.Errorf("Journal(limit 5000) = %v", err)
	}
}

// TestTestConnection runs the testRequest through the same pipeline.
func TestTestConnection(t *testing.T) {
	r := newRig(t)
	v := apiKeyReq("ex", apiHost)
	v["testRequest"] = map[string]any{"method": "GET", "pathAndQuery": "/v1/me?verbose=1"}
	r.connect(t, "app1", v, map[string]string{"api_key": secretKey})
	res, err := r.d.exec.TestConnection(t.Context(), "app1", "ex")
	if err != nil || res.Code != "" || res.Status != 200 {
		t.Fatalf("TestConnection = %+v, %v", res, err)
	}
	got := r.up.last(t)
	if !strings.HasPrefix(got.URI, "/v1/me?verbose=1&appid=") || got.Header.Get("X-Key") != secretKey {
		t.Errorf("probe sent %q %v", got.URI, got.Header)
	}
	if strings.Contains(string(res.Frame), "Secret") {
		t.Errorf("probe answer carries the credential: %s", res.Frame)
	}
	r.connect(t, "app1", apiKeyReq("bare", "bare.example.com"), nil)
	if _, err := r.d.exec.TestConnection(t.Context(), "app1", "bare"); !errorsIsCode(err, errcode.NotFound) {
		t.Errorf("TestConnection without testRequest = %v", err)
	}
	if _, err := r.d.exec.TestConnection(t.Context(), "app1", "nope"); !errorsIsCode(err, errcode.ConnectionNotFound) {
		t.Errorf("TestConnection(unknown) = %v", err)
	}
}

// TestNoStrictnessKnob: no Config field can relax a gate. The executor's
// fields are a fixed, reviewed list; a new one must be added here on
// purpose, and no field name reads like a switch that weakens a check.
//
// conformance: P3-X14-43
func TestNoStrictnessKnob(t *testing.T) {
	want := []string{"DataDir", "Logger", "Now", "Registry", "Starters", "Public", "LAN", "TransportPolicy", "LANDiscover", "Helpers", "Tokens",
		"ConfirmTimeout", "RequestTimeout", "StandingTargets"}
	var got []string
	weak := regexp.MustCompile(`(?i)insecure|skip|disable|allow|strict|bypass|unsafe|lenient|trust`)
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		got = append(got, name)
		if weak.MatchString(name) {
			t.Errorf("Config.%s reads like a knob that weakens a gate", name)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config fields = %v, want the reviewed %v", got, want)
	}
	if _, err := New(t.Context(), Config{DataDir: t.TempDir() + "/d", TransportPolicy: "permissive"}); err == nil {
		t.Error("New accepted a transport policy that is neither desktop nor browser")
	}
}
