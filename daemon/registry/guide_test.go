package registry

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// guidePath is the micro-app authors' guide, whose examples this file runs.
const guidePath = "../../api/PROVIDERS.md"

// guideExample is one worked example of the guide: the requirement block
// and the entry and option its prose says the borrow uses.
type guideExample struct {
	raw             string
	entry, optionID string
}

var (
	guideBlock  = regexp.MustCompile("(?s)```json requirement\n(.*?)```")
	guideBorrow = regexp.MustCompile("snugd borrows entry `([a-z0-9-]+)`, option `([a-z0-9-]+)`")
)

// guideExamples reads the guide's requirement blocks, each paired with the
// first "snugd borrows entry `E`, option `O`" sentence after it.
func guideExamples(t *testing.T) []guideExample {
	t.Helper()
	b, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var out []guideExample
	for _, m := range guideBlock.FindAllStringSubmatchIndex(doc, -1) {
		rest := doc[m[1]:]
		if next := strings.Index(rest, "```json requirement"); next >= 0 {
			rest = rest[:next]
		}
		said := guideBorrow.FindStringSubmatch(rest)
		if said == nil {
			t.Fatalf("the guide's example at byte %d says no \"snugd borrows entry ..., option ...\"", m[0])
		}
		out = append(out, guideExample{raw: doc[m[2]:m[3]], entry: said[1], optionID: said[2]})
	}
	return out
}

// resolveGuide parses an example as a host's user channel does (no
// userLayer) and resolves it against the shipped registry.
func resolveGuide(t *testing.T, g *Registry, raw string) Resolution {
	t.Helper()
	r, vs := requirement.Parse([]byte(raw), requirement.Options{})
	if len(vs) > 0 {
		t.Fatalf("the guide's example does not parse: %v\n%s", vs, raw)
	}
	res, err := g.Resolve(r)
	if err != nil {
		t.Fatalf("Resolve(guide example) = %v", err)
	}
	return res
}

// TestGuideExamples runs the three worked examples of api/PROVIDERS.md:
// each parses, borrows the entry and option its prose names, and comes
// out as the prose says — the key moved to the documented header, the
// scopes cut to the pin, the LAN address kept.
//
// conformance: P3-C12.12-01, P3-C12.12-03, P3-C12.12-06, P3-C12.12-08, P3-C12.12-12
func TestGuideExamples(t *testing.T) {
	g := shipped(t)
	examples := guideExamples(t)
	if len(examples) != 3 {
		t.Fatalf("the guide has %d worked examples, want 3 (an API key, an OAuth sign-in, a LAN device)", len(examples))
	}
	byEntry := map[string]Resolution{}
	for _, ex := range examples {
		res := resolveGuide(t, g, ex.raw)
		if !res.Borrowed || res.EntryID != ex.entry || res.OptionID != ex.optionID {
			t.Errorf("example borrowing %s/%s resolved to borrowed %v %s/%s", ex.entry, ex.optionID, res.Borrowed, res.EntryID, res.OptionID)
		}
		if res.Disclosure != Disclosure {
			t.Errorf("example %s: Disclosure = %q, want the borrow disclosed", ex.entry, res.Disclosure)
		}
		byEntry[ex.entry] = res
	}

	t.Run("api key", func(t *testing.T) {
		r := byEntry["finnhub"].Requirement
		if r == nil {
			t.Fatal("no Finnhub example")
		}
		if r.Request.QueryTemplate != nil || r.Request.HeaderTemplate["X-Finnhub-Token"] != "{{api_key}}" {
			t.Errorf("borrowed templates = header %v query %v; want the key in X-Finnhub-Token and nothing in the query", r.Request.HeaderTemplate, r.Request.QueryTemplate)
		}
		if got := requirement.DeriveAllowedHosts(r); !slices.Equal(got, []string{"finnhub.io"}) {
			t.Errorf("ceiling = %v, want [finnhub.io]", got)
		}
	})
	t.Run("oauth sign-in", func(t *testing.T) {
		r := byEntry["spotify"].Requirement
		if r == nil {
			t.Fatal("no Spotify example")
		}
		want := []string{"user-read-playback-state", "user-read-currently-playing", "playlist-read-private"}
		if !slices.Equal(r.Scopes, want) {
			t.Errorf("scopes = %v, want the pin %v (the declared write scope dropped)", r.Scopes, want)
		}
		if r.PKCE == nil || !*r.PKCE {
			t.Error("pkce is off; the guide says it is on")
		}
		if p, err := g.DesktopRedirect(r); err != nil || p != PostureLoopback {
			t.Errorf("DesktopRedirect = %q, %v; want the vouched loopback the guide describes", p, err)
		}
		if _, vouched := g.WebRegistration(r); !vouched {
			t.Error("WebRegistration is not the pinned one; the guide says the web redirect is vouched")
		}
	})
	t.Run("lan device", func(t *testing.T) {
		r := byEntry["home-assistant"].Requirement
		if r == nil {
			t.Fatal("no Home Assistant example")
		}
		if got := requirement.DeriveAllowedHosts(r); len(got) != 0 {
			t.Errorf("pre-collection ceiling = %v, want none", got)
		}
		var raw string
		for _, ex := range examples {
			if ex.entry == "home-assistant" {
				raw = ex.raw
			}
		}
		// The person enters the address: the borrow keeps it as the one host.
		collected := strings.Replace(raw, `"lanHost"`, `"declaredApiHosts": ["192.168.1.40"], "lanHost"`, 1)
		res := resolveGuide(t, g, collected)
		if got := requirement.DeriveAllowedHosts(res.Requirement); !slices.Equal(got, []string{"192.168.1.40"}) {
			t.Errorf("post-collection ceiling = %v, want the collected address only", got)
		}
		// Only a private IPv4 address is collected, as the guide says.
		public := strings.Replace(raw, `"lanHost"`, `"declaredApiHosts": ["198.51.100.7"], "lanHost"`, 1)
		pr, vs := requirement.Parse([]byte(public), requirement.Options{})
		if len(vs) == 0 { // the schema let it through: the borrow's own check must refuse it
			if _, err := g.Resolve(pr); !errors.Is(err, ErrLANAddress) {
				t.Errorf("a public address was accepted as the Home Assistant address: %v", err)
			}
		} else if !slices.ContainsFunc(vs, func(v requirement.Violation) bool { return strings.HasPrefix(v.Rule, "lan-host.") }) {
			t.Errorf("a public address was refused for another reason: %v", vs)
		}
	})
}
