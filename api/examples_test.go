package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

// TestExamples: every requirement in api/examples parses strictly, and
// proposed to a daemon with the shipped registry it lands as a declared
// row whose review shows what examples/README.md says a person sees: the
// provider, the kind, the hosts approval would freeze, the registry's
// disclosure, the scopes, the steps and the pairing still owed. Every
// file in the folder has a case, so a new example cannot go untested.
//
// conformance: P3-C12.12-15
func TestExamples(t *testing.T) {
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *daemon.Config) { c.Registry = reg })
	type example struct {
		file, slot, provider, kind, entry string
		hosts, scopes                     []string
		pairing                           string // the pairing family a person completes after approval
	}
	cases := []example{
		{file: "simulator.json", slot: "chat", provider: "Snug Simulator", kind: "linked_device", entry: "sim", hosts: []string{"sim.sidecar.invalid"}, pairing: "device-link"},
		{file: "simplefin.json", slot: "bank", provider: "SimpleFIN", kind: "basic_auth", entry: "simplefin", hosts: []string{"bridge.simplefin.org"}, pairing: "token-claim"},
		// A LAN row's one host is the address collected later: until then
		// its ceiling is empty and every request is refused.
		{file: "hue.json", slot: "lights", provider: "Philips Hue", kind: "api_key", entry: "philips-hue", hosts: []string{}, pairing: "exchange"},
		{file: "spotify.json", slot: "music", provider: "Spotify", kind: "oauth2_auth_code", entry: "spotify", hosts: []string{"accounts.spotify.com", "api.spotify.com"}, scopes: []string{"user-read-playback-state", "user-read-currently-playing", "playlist-read-private"}},
		{file: "openweather.json", slot: "weather", provider: "OpenWeather", kind: "api_key", entry: "openweather", hosts: []string{"api.openweathermap.org"}},
		{file: "exchange-requirement.json", slot: "exchange", provider: "Coinbase Exchange", kind: "api_key", entry: "coinbase-exchange", hosts: []string{"api.exchange.coinbase.com"}},
	}
	files, _ := filepath.Glob("examples/*.json")
	for _, f := range files {
		if !slices.ContainsFunc(cases, func(c example) bool { return c.file == filepath.Base(f) }) {
			t.Errorf("%s has no case in TestExamples", f)
		}
	}
	readme, err := os.ReadFile("examples/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("examples", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if _, vs := requirement.Parse(raw, requirement.Options{}); len(vs) > 0 {
				t.Fatalf("%s does not parse: %v", tc.file, vs)
			}
			if !strings.Contains(string(readme), "`"+tc.file+"`") {
				t.Errorf("examples/README.md does not describe %s", tc.file)
			}
			ctx := t.Context()
			app := "examples-" + strings.TrimSuffix(strings.TrimSuffix(tc.file, ".json"), "-requirement")
			p, err := e.ctl.PutConnection(ctx, app, tc.slot, raw)
			if err != nil {
				t.Fatalf("PUT %s = %v", tc.file, err)
			}
			if p.Connection.Status != "declared" || !p.Borrowed || p.EntryID != tc.entry {
				t.Errorf("proposal = status %q borrowed %v entry %q; want declared, borrowed from %q", p.Connection.Status, p.Borrowed, p.EntryID, tc.entry)
			}
			rv, err := e.ctl.Review(ctx, app, tc.slot)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Provider struct{ Name string } `json:"provider"`
				Kind     string                `json:"kind"`
			}
			json.Unmarshal(rv.Connection.Requirement, &r)
			if r.Provider.Name != tc.provider || r.Kind != tc.kind {
				t.Errorf("review shows %q (%s), want %q (%s)", r.Provider.Name, r.Kind, tc.provider, tc.kind)
			}
			if hosts := append([]string{}, rv.Hosts...); !slices.Equal(hosts, tc.hosts) {
				t.Errorf("review hosts = %q, want %q", hosts, tc.hosts)
			}
			if !slices.Equal(rv.Scopes, tc.scopes) && (len(rv.Scopes) != 0 || len(tc.scopes) != 0) {
				t.Errorf("review scopes = %q, want %q", rv.Scopes, tc.scopes)
			}
			if rv.Disclosure != registry.Disclosure || len(rv.Instructions) == 0 {
				t.Errorf("review disclosure %q, %d instructions; want the registry's disclosure and its steps", rv.Disclosure, len(rv.Instructions))
			}
			if rv.PairingFamily != tc.pairing || rv.PairingOwed != (tc.pairing != "") {
				t.Errorf("review pairing = %q owed %v, want %q", rv.PairingFamily, rv.PairingOwed, tc.pairing)
			}
			if rv.ReviewToken == "" {
				t.Error("the review carries no reviewToken to approve it with")
			}
		})
	}
}
