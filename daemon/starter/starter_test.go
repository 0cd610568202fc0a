package starter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

func catalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	return c
}

// digest returns the hex SHA-256 of b.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestLoadBundled loads the bundled starters and checks every requirement
// of every connection.json again here, element by element, with
// requirement.Parse and zero Options: a starter manifest never carries a
// userLayer.
func TestLoadBundled(t *testing.T) {
	c := catalog(t)
	if got := c.IDs(); !slices.Equal(got, []string{"lights", "weather"}) {
		t.Fatalf("IDs() = %v, want [lights weather]", got)
	}
	for _, id := range c.IDs() {
		m, _ := c.Lookup(id)
		var items []json.RawMessage
		if err := json.Unmarshal(m.Connection, &items); err != nil || len(items) == 0 {
			t.Fatalf("%s connection.json = %v, want a JSON array", id, err)
		}
		for i, item := range items {
			r, vs := requirement.Parse(item, requirement.Options{})
			if len(vs) > 0 {
				t.Errorf("%s requirement %d: requirement.Parse = %v", id, i, vs)
				continue
			}
			if r.UserLayer != nil || r.Canonical() != m.Requirements[i].Canonical() {
				t.Errorf("%s requirement %d differs from the manifest's", id, i)
			}
		}
		if m.SHA256 != digest(m.HTML) {
			t.Errorf("%s SHA256 = %s, want the digest of its HTML", id, m.SHA256)
		}
	}
}

// TestLoadRefusesUserLayer: the manifest channel never admits a userLayer.
//
// conformance: P3-C12.10-03
func TestLoadRefusesUserLayer(t *testing.T) {
	_, err := load(os.DirFS("testdata/broken/userlayer"))
	if err == nil || !strings.Contains(err.Error(), requirement.RuleUserLayerChannel) {
		t.Errorf("load(userLayer starter) = %v, want a %s refusal", err, requirement.RuleUserLayerChannel)
	}
}

// TestLoadBroken: each broken bundle under testdata/broken is refused.
func TestLoadBroken(t *testing.T) {
	for dir, want := range map[string]string{
		"extra-file":     "exactly index.html and connection.json",
		"not-array":      "JSON array",
		"empty":          "1 to 8 requirements",
		"too-many":       "1 to 8 requirements",
		"duplicate-slot": "declared twice",
		"unknown-seat":   requirement.RuleKeyUnknown,
		"bad-id":         "named like a slot",
		"trailing":       "JSON array",
	} {
		t.Run(dir, func(t *testing.T) {
			c, err := load(os.DirFS(filepath.Join("testdata", "broken", dir)))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("load(%s) = %v, %v; want an error saying %q", dir, c, err, want)
			}
		})
	}
}

// TestStarterApps: each bundled app reaches the network only through
// snug:net-request frames to connection-relative URLs of its own slots,
// and never parses network data as HTML.
func TestStarterApps(t *testing.T) {
	c := catalog(t)
	for _, id := range c.IDs() {
		m, _ := c.Lookup(id)
		html := string(m.HTML)
		t.Run(id, func(t *testing.T) {
			for _, r := range m.Requirements {
				if !strings.Contains(html, `"snug-connection://" + SLOT`) || !strings.Contains(html, `const SLOT = "`+r.Slot+`"`) {
					t.Errorf("app does not address slot %q by connection-relative URL", r.Slot)
				}
			}
			for _, must := range []string{"snug:net-request", "snug:net-response", "snug:app-announce", "snug:host-ready", "instanceId"} {
				if !strings.Contains(html, must) {
					t.Errorf("app never mentions %s", must)
				}
			}
			for _, never := range []string{"http://", "https://", "fetch(", "XMLHttpRequest", "WebSocket", "innerHTML", "outerHTML", "eval(", "<iframe", "src=\""} {
				if strings.Contains(html, never) {
					t.Errorf("app contains %q", never)
				}
			}
		})
	}
}

// TestVouch is the two-fact check: the install source must be a
// bundled starter, and both the factory and the current HTML must match
// the bundled bytes; otherwise the declaration is treated as absent.
//
// conformance: P3-C12.1-11, P3-C12.1-12, P3-C12.1-13
func TestVouch(t *testing.T) {
	c := catalog(t)
	weather, _ := c.Lookup("weather")
	lights, _ := c.Lookup("lights")
	good := digest(weather.HTML)
	changed := slices.Clone(weather.HTML)
	changed[len(changed)/2] ^= 0x01 // one byte
	oneByte := digest(changed)
	appended := digest(append(slices.Clone(weather.HTML), '\n'))

	for _, tc := range []struct {
		name                     string
		source, factory, current string
		want                     bool
	}{
		{"both match", "weather", good, good, true},
		{"upper-case hex", "weather", strings.ToUpper(good), good, true},
		{"unknown source", "calendar", good, good, false},
		{"source in another case", "Weather", good, good, false},
		{"source with a space", "weather ", good, good, false},
		{"source with a scheme", "starter:weather", good, good, false},
		{"empty source", "", good, good, false},
		{"factory one byte changed", "weather", oneByte, good, false},
		{"current one byte changed", "weather", good, oneByte, false},
		{"current with a byte appended", "weather", good, appended, false},
		{"both changed", "weather", oneByte, oneByte, false},
		{"another starter's HTML", "weather", digest(lights.HTML), digest(lights.HTML), false},
		{"the right HTML under the wrong source", "lights", good, good, false},
		{"digest too short", "weather", good[:63], good, false},
		{"digest too long", "weather", good, good + "0", false},
		{"digest not hex", "weather", "z" + good[1:], good, false},
		{"empty digests", "weather", "", "", false},
		{"raw digest bytes", "weather", string(sha256sum(weather.HTML)), good, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := c.Vouch(tc.source, tc.factory, tc.current)
			if ok != tc.want {
				t.Fatalf("Vouch(%q, …) = %v, want %v", tc.source, ok, tc.want)
			}
			if !ok && (m.ID != "" || m.HTML != nil || m.Connection != nil || m.Requirements != nil) {
				t.Errorf("Vouch refused but returned a manifest %q: an unvouched declaration is absent", m.ID)
			}
			if ok && (m.ID != tc.source || len(m.Requirements) == 0 || m.SHA256 != good) {
				t.Errorf("Vouch = %+v, want the bundled %s manifest", m.ID, tc.source)
			}
		})
	}
}

func sha256sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// TestManifestIsACopy: changing a returned manifest changes nothing in the
// catalog.
func TestManifestIsACopy(t *testing.T) {
	c := catalog(t)
	m, _ := c.Lookup("weather")
	good := m.SHA256
	m.HTML[0] ^= 0xff
	m.Connection[0] = ' '
	m.Requirements[0].DeclaredAPIHosts[0] = "evil.example"
	again, ok := c.Vouch("weather", good, good)
	if !ok || again.HTML[0] == m.HTML[0] || again.Connection[0] == ' ' || again.Requirements[0].DeclaredAPIHosts[0] != "api.openweathermap.org" {
		t.Errorf("the catalog changed through a returned manifest")
	}
}

// FuzzVouch: Vouch never panics and vouches exactly when the source names
// a bundled starter and both inputs decode, as hex, to its digest.
func FuzzVouch(f *testing.F) {
	c, err := Load()
	if err != nil {
		f.Fatal(err)
	}
	m, _ := c.Lookup("weather")
	f.Add("weather", m.SHA256, m.SHA256)
	f.Add("weather", strings.ToUpper(m.SHA256), m.SHA256)
	f.Add("lights", m.SHA256, "")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, source, factory, current string) {
		got, ok := c.Vouch(source, factory, current)
		want := false
		if s, found := c.Lookup(source); found {
			f, errF := hex.DecodeString(factory)
			cur, errC := hex.DecodeString(current)
			want = errF == nil && errC == nil && hex.EncodeToString(f) == s.SHA256 && hex.EncodeToString(cur) == s.SHA256
		}
		if ok != want {
			t.Fatalf("Vouch(%q, %q, %q) = %v, want %v", source, factory, current, ok, want)
		}
		if ok && got.ID != source {
			t.Fatalf("Vouch returned starter %q for source %q", got.ID, source)
		}
	})
}
