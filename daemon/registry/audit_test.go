package registry

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/template"
)

// The audit is the review every change to data/ passes on top of Load's
// rules: questions Load cannot answer from one file's shape alone (is this
// host anybody's to register? does a note back this posture?). Each check
// reads the whole registry and returns one sentence per problem, naming the
// entry; TestAuditShipped runs them over the shipped data and
// TestAuditCatchesMutations breaks the data once per check and requires
// that check, and only that check, to notice.

// An auditCheck is one rule of the audit.
type auditCheck struct {
	name string
	run  func(entries []Entry) []string
}

// auditChecks returns the audit's rules. now bounds the dates a source may
// carry.
func auditChecks(now time.Time) []auditCheck {
	return []auditCheck{
		{"host.public", auditHosts},
		{"endpoint.pinned", auditEndpoints},
		{"fields.templates", auditFields},
		{"posture.sourced", auditPostures},
		{"scopes.least", auditScopes},
		{"names.unique", auditNames},
		{"sources.dated", func(es []Entry) []string { return auditDates(es, now) }},
		{"test-request.or-reason", auditTestRequests},
	}
}

// reservedDomains are registrable-looking names no provider can own
// (RFC 2606, RFC 6761): an entry pinning one is a placeholder left behind.
var reservedDomains = []string{"example.com", "example.net", "example.org"}

// specialUse are the special-use domain names (RFC 6761, RFC 8375,
// RFC 9476, and the ICANN-reserved .internal) nobody registers: checked by
// name, because some sit under an ICANN suffix (home.arpa under arpa).
var specialUse = []string{"local", "localhost", "internal", "home.arpa", "lan", "test", "invalid", "onion", "alt", "example"}

// operatorSuffixes are the private public-suffix-list entries a pinned host
// may sit under, each with why: the list marks a suffix private when its
// operator hands out names under it, and a host there is trusted only when
// the provider itself operates the whole suffix. Adding one is a review.
var operatorSuffixes = map[string]string{
	"googleapis.com": "Google's API domain: Google operates every name under it (the list entry covers Cloud Storage buckets)",
}

// auditHosts: every pinned host is a DNS name under an ICANN public suffix
// and is not itself a suffix — so someone registered it and answers for it.
// An IP literal, a special-use name (.local, .internal, .home.arpa, .lan,
// .localhost, .test) and a name under a private suffix (github.io: anyone
// can take a subdomain) are refused, unless the provider operates that
// whole suffix (operatorSuffixes). A helper's symbolic host is the one
// exception the schema marks (helper); a LAN entry pins no host at all.
func auditHosts(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if e.Helper != nil {
			continue
		}
		if e.LANHost == nil && len(e.Hosts) == 0 {
			out = append(out, e.ID+": an entry that is not a LAN entry pins at least one host")
		}
		if e.LANHost != nil && len(e.Hosts) > 0 {
			out = append(out, e.ID+": a LAN entry pins no host; its one host is the address the user collects")
		}
		for _, h := range e.Hosts {
			if reason := publicName(h); reason != "" {
				out = append(out, e.ID+": host "+h+" "+reason)
			}
		}
	}
	return out
}

// publicName says why h is not a registrable public name, or "".
func publicName(h string) string {
	if net.ParseIP(strings.Trim(h, "[]")) != nil {
		return "is an IP address"
	}
	for _, su := range specialUse {
		if h == su || strings.HasSuffix(h, "."+su) {
			return "is a special-use name (." + su + ")"
		}
	}
	if suffix, icann := publicsuffix.PublicSuffix(h); !icann {
		if _, ok := operatorSuffixes[suffix]; !ok || h == suffix {
			return "is not under an ICANN public suffix (" + suffix + " is private or special-use)"
		}
		return ""
	}
	etld1, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return "is itself a public suffix"
	}
	if slices.Contains(reservedDomains, etld1) {
		return "is under a reserved example domain"
	}
	return ""
}

// auditEndpoints: every OAuth endpoint, of the option and of its userLayer,
// is an https URL on one of the entry's pinned hosts.
func auditEndpoints(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		for _, o := range e.Options {
			eps := []requirement.Endpoints{o.Endpoints}
			if o.UserLayer != nil {
				eps = append(eps, o.UserLayer.Endpoints)
			}
			for _, ep := range eps {
				for _, raw := range []string{ep.Authorize, ep.Token, ep.Refresh, ep.Revoke} {
					if raw == "" {
						continue
					}
					u, err := url.Parse(raw)
					switch {
					case err != nil || u.Scheme != "https":
						out = append(out, e.ID+"/"+o.ID+": endpoint "+raw+" is not https")
					case !slices.Contains(e.Hosts, u.Hostname()):
						out = append(out, e.ID+"/"+o.ID+": endpoint "+raw+" is not on a pinned host")
					}
				}
			}
		}
	}
	return out
}

// flowFields are the field keys an OAuth sign-in consumes itself, without
// a template.
var flowFields = []string{"client_id", "client_secret"}

// auditFields: every field an option declares is used — by its templates,
// by the OAuth flow (client_id, client_secret) or by the helper that holds
// it (linked_device) — and every field its templates reference is declared.
// A declared field nothing reads is a credential collected for nothing; a
// referenced one nothing declares could never render.
func auditFields(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		for _, o := range e.Options {
			keys := optionFieldKeys(o)
			set, findings := template.Compile(keys, o.Request.Templates())
			for _, f := range findings {
				out = append(out, e.ID+"/"+o.ID+": template "+f.Path+": "+f.Message)
			}
			if set == nil || o.Kind == requirement.KindLinkedDevice {
				continue
			}
			used := set.Fields()
			for _, k := range keys {
				if slices.Contains(used, k) || (o.Kind.IsOAuth() && slices.Contains(flowFields, k)) {
					continue
				}
				out = append(out, e.ID+"/"+o.ID+": field "+k+" is declared but no template or flow uses it")
			}
		}
	}
	return out
}

func optionFieldKeys(o Option) []string {
	var keys []string
	for _, f := range o.Fields {
		keys = append(keys, f.Key)
	}
	if o.UserLayer != nil {
		for _, f := range o.UserLayer.Fields {
			keys = append(keys, f.Key)
		}
	}
	return keys
}

// auditPostures: a vouched desktop redirect posture is backed by a source
// note that says how the provider treats loopback redirects, and a web
// posture by one about its redirect URIs. The posture is what lets a
// sign-in start; the note is why the registry believes it.
func auditPostures(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if e.DesktopRedirect != "" && !notesMention(e, "loopback") {
			out = append(out, e.ID+": the desktop redirect posture cites no source note on loopback redirects")
		}
		if e.WebRedirect != "" && !notesMention(e, "redirect") {
			out = append(out, e.ID+": the web redirect posture cites no source note on redirect URIs")
		}
	}
	return out
}

// privilegedWord matches the words of a scope that ask for more than
// reading: a scope holding one needs a source note naming it, saying why.
var privilegedWord = regexp.MustCompile(`(?i)(^|[^a-z])(admin|write|manage|delete|modify|full|owner|sudo)([^a-z]|$)`)

// auditScopes: the pinned scopes (entry and userLayer) are least
// privilege — none asks for admin, write, manage, delete, modify or full
// access unless a source note names that scope and so says why.
func auditScopes(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		scopes := slices.Clone(e.Scopes)
		for _, o := range e.Options {
			if o.UserLayer != nil {
				scopes = append(scopes, o.UserLayer.Scopes...)
			}
		}
		for _, s := range scopes {
			if privilegedWord.MatchString(s) && !notesMention(e, s) {
				out = append(out, e.ID+": scope "+s+" asks for more than reading and no source note says why")
			}
		}
	}
	return out
}

// looseName folds a provider name, an alias or an ID for comparison across
// entries: lowercase letters and digits only, so "Open Weather Map",
// "OpenWeatherMap" and "open-weather-map" are one name. Load compares
// names case-insensitively (what the borrow trigger does); the
// audit is stricter, so two entries are never a punctuation mark apart.
func looseName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// auditNames: IDs, display names and aliases are unique across entries
// under looseName, so two entries never match one provider name.
func auditNames(entries []Entry) []string {
	var out []string
	owner := make(map[string]string)
	for _, e := range entries {
		for _, n := range append([]string{e.ID, e.DisplayName}, e.Aliases...) {
			k := looseName(n)
			if k == "" {
				out = append(out, e.ID+": name "+n+" has no letter or digit")
				continue
			}
			if other, ok := owner[k]; ok && other != e.ID {
				out = append(out, e.ID+": name "+n+" is also a name of entry "+other)
				continue
			}
			owner[k] = e.ID
		}
	}
	return out
}

// auditDates: every source carries the date it was checked, a real date
// and not one after now.
func auditDates(entries []Entry, now time.Time) []string {
	var out []string
	for _, e := range entries {
		for _, s := range e.Sources {
			d, err := time.Parse(time.DateOnly, s.Checked)
			switch {
			case err != nil:
				out = append(out, e.ID+": source "+s.URL+" has no valid checked date")
			case d.After(now):
				out = append(out, e.ID+": source "+s.URL+" is dated after today")
			}
		}
	}
	return out
}

// auditTestRequests: an entry has a test request, or a source note saying
// there is none to pin (a seat left out is said, never guessed). A helper
// entry is exempt: its requests belong to the helper protocol.
func auditTestRequests(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if e.TestRequest == nil && e.Helper == nil && !notesMention(e, "no test request") {
			out = append(out, e.ID+": no test request, and no source note says why")
		}
	}
	return out
}

// notesMention reports whether a source note of e contains s,
// case-insensitively.
func notesMention(e Entry, s string) bool {
	return slices.ContainsFunc(e.Sources, func(src Source) bool {
		return strings.Contains(strings.ToLower(src.Note), strings.ToLower(s))
	})
}

// auditToday is the audit's "now": the real date, so a source dated in the
// future fails the day it is written.
func auditToday() time.Time { return time.Now().UTC() }

// TestAuditShipped runs every audit check over the registry snugd ships.
//
// conformance: P3-C12.12-01, P3-C12.12-02, P3-C12.12-27, P3-C12.12-28
func TestAuditShipped(t *testing.T) {
	entries := shipped(t).Entries()
	for _, c := range auditChecks(auditToday()) {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.run(entries) {
				t.Errorf("%s: %s", c.name, p)
			}
		})
	}
}

// TestAuditCatchesMutations breaks a copy of the shipped data once per
// case and requires the named check to report it and every other check to
// stay silent, so each check is proven to fail when its rule is broken. A
// control case per rule that has an escape ("unless noted") shows the
// escape works.
//
// conformance: P3-C12.12-27, P3-C12.12-28
func TestAuditCatchesMutations(t *testing.T) {
	type mutation struct {
		name   string
		check  string // "" for a control case: nothing may fire
		mutate func(t *testing.T, es []Entry)
	}
	lookup := func(t *testing.T, es []Entry, id string) *Entry {
		t.Helper()
		i := slices.IndexFunc(es, func(e Entry) bool { return e.ID == id })
		if i < 0 {
			t.Fatalf("no shipped entry %s", id)
		}
		return &es[i]
	}
	addHost := func(id, h string) func(*testing.T, []Entry) {
		return func(t *testing.T, es []Entry) { e := lookup(t, es, id); e.Hosts = append(e.Hosts, h) }
	}
	cases := []mutation{
		{"ipv4 host", "host.public", addHost("openweather", "203.0.113.7")},
		{"ipv6 host", "host.public", addHost("openweather", "2001:db8::1")},
		{"mdns host", "host.public", addHost("openweather", "printer.local")},
		{"home.arpa host", "host.public", addHost("nasa", "nas.home.arpa")},
		{"internal host", "host.public", addHost("nasa", "api.corp.internal")},
		{"private suffix host", "host.public", addHost("coingecko", "someone.github.io")},
		{"bare public suffix", "host.public", addHost("coingecko", "co.uk")},
		{"reserved example host", "host.public", addHost("coingecko", "api.example.com")},
		{"ordinary entry without hosts", "host.public", func(t *testing.T, es []Entry) { lookup(t, es, "nasa").Hosts = nil }},
		{"LAN entry with a host", "host.public", addHost("philips-hue", "api.meethue.com")},
		{"http endpoint", "endpoint.pinned", func(t *testing.T, es []Entry) {
			lookup(t, es, "spotify").Options[0].Endpoints.Token = "http://accounts.spotify.com/api/token"
		}},
		{"endpoint off the pinned hosts", "endpoint.pinned", func(t *testing.T, es []Entry) {
			lookup(t, es, "spotify").Options[0].Endpoints.Revoke = "https://revoke.spotify.example/revoke"
		}},
		{"declared field no template reads", "fields.templates", func(t *testing.T, es []Entry) {
			o := &lookup(t, es, "openweather").Options[0]
			o.Fields = append(o.Fields, requirement.Field{Key: "account_id", Label: "Account", Type: requirement.FieldText})
		}},
		{"template reads an undeclared field", "fields.templates", func(t *testing.T, es []Entry) {
			lookup(t, es, "openweather").Options[0].Request.QueryTemplate = map[string]string{"appid": "{{api_secret}}"}
		}},
		{"api key option with no template", "fields.templates", func(t *testing.T, es []Entry) {
			lookup(t, es, "nasa").Options[0].Request = requirement.Request{}
		}},
		{"oauth client fields are the flow's", "", func(t *testing.T, es []Entry) {
			_ = lookup(t, es, "github") // github's oauth-app option declares client_id and client_secret, used by no template
		}},
		{"loopback posture without a note", "posture.sourced", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "spotify")
			e.Sources = slices.DeleteFunc(slices.Clone(e.Sources), func(s Source) bool {
				return strings.Contains(strings.ToLower(s.Note), "loopback")
			})
		}},
		{"web posture without a note", "posture.sourced", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "github")
			e.DesktopRedirect = ""
			e.Sources = slices.DeleteFunc(slices.Clone(e.Sources), func(s Source) bool {
				return strings.Contains(strings.ToLower(s.Note), "redirect")
			})
		}},
		{"write scope", "scopes.least", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "spotify")
			e.Scopes = append(e.Scopes, "user-modify-playback-state")
		}},
		{"admin scope", "scopes.least", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "github")
			e.Scopes = append(e.Scopes, "admin:org")
		}},
		{"write scope with a note saying why", "", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "spotify")
			e.Scopes = append(e.Scopes, "user-modify-playback-state")
			e.Sources = append(slices.Clone(e.Sources), Source{URL: "https://developer.spotify.com/documentation/web-api/concepts/scopes", Checked: "2026-12-01",
				Note: "user-modify-playback-state is pinned because the player app pauses and skips tracks."})
		}},
		{"alias shared in other spelling", "names.unique", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "nasa")
			e.Aliases = append(e.Aliases, "Open-Weather-Map")
		}},
		{"alias equal to another entry's id", "names.unique", func(t *testing.T, es []Entry) {
			e := lookup(t, es, "nasa")
			e.Aliases = append(e.Aliases, "Coin Gecko")
		}},
		{"source dated in the future", "sources.dated", func(t *testing.T, es []Entry) {
			lookup(t, es, "nasa").Sources[0].Checked = auditToday().AddDate(0, 1, 0).Format(time.DateOnly)
		}},
		{"source without a date", "sources.dated", func(t *testing.T, es []Entry) {
			lookup(t, es, "nasa").Sources[0].Checked = ""
		}},
		{"no test request and no reason", "test-request.or-reason", func(t *testing.T, es []Entry) {
			lookup(t, es, "openweather").TestRequest = nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries := shipped(t).Entries() // a fresh copy each case
			tc.mutate(t, entries)
			for _, c := range auditChecks(auditToday()) {
				got := c.run(entries)
				switch {
				case c.name == tc.check && len(got) == 0:
					t.Errorf("check %s reported nothing; want the mutation caught", c.name)
				case c.name != tc.check && len(got) > 0:
					t.Errorf("check %s = %q; want nothing (the mutation targets %q)", c.name, got, tc.check)
				}
			}
		})
	}
}
