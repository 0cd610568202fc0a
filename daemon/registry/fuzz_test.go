package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// FuzzResolve runs the borrow ban over requirements built by
// requirement.Parse from fuzzed documents, against the shipped registry.
// Properties: Resolve never panics and refuses only with its documented
// errors; a borrowed result is valid, carries the entry's display name, and
// derives exactly the entry's pinned hosts (a LAN entry: at most the one
// collected RFC-1918 literal); it resolves to itself again; and a
// requirement that is not borrowed comes back as the very same value and
// triggers nothing.
func FuzzResolve(f *testing.F) {
	for _, d := range []doc{
		apiKeyDoc("Spotify", "api.evil.example"),
		apiKeyDoc("5potify", "api.spotify.com"),
		apiKeyDoc("Coinbase", "api.exchange.coinbase.com"),
		apiKeyDoc("Acme", "api.acme.example"),
		lanDoc("Hue", "192.168.1.20"),
		lanDoc("Acme Lights", "10.0.0.7"),
	} {
		b, _ := json.Marshal(d)
		f.Add(b)
	}
	g, err := Load()
	if err != nil {
		f.Fatalf("Load() = %v", err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, vs := requirement.Parse(raw, requirement.Options{})
		if len(vs) > 0 {
			return
		}
		before := r.Canonical()
		res, err := g.Resolve(r)
		if err != nil {
			var ie *InvalidError
			if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrLANAddress) && !errors.As(err, &ie) {
				t.Fatalf("Resolve error %v is not one Resolve documents", err)
			}
			if r.Canonical() != before {
				t.Fatalf("a refused Resolve changed its input")
			}
			return
		}
		if !res.Borrowed {
			if res.Requirement != r || r.Canonical() != before {
				t.Fatalf("not borrowed, yet not returned unchanged")
			}
			if _, ok := g.byName[foldName(r.Provider.Name)]; ok {
				t.Fatalf("name %q names an entry but nothing was borrowed", r.Provider.Name)
			}
			for _, h := range requirement.DeriveAllowedHosts(r) {
				if _, ok := g.byHost[h]; ok {
					t.Fatalf("host %q is pinned but nothing was borrowed", h)
				}
			}
			return
		}
		e, ok := g.Lookup(res.EntryID)
		if !ok {
			t.Fatalf("borrowed from unknown entry %q", res.EntryID)
		}
		out := res.Requirement
		if out.Provider.Name != e.DisplayName || out.Slot != r.Slot || res.Disclosure != Disclosure {
			t.Fatalf("borrowed %+v: name %q slot %q, want %q %q", res, out.Provider.Name, out.Slot, e.DisplayName, r.Slot)
		}
		hosts := requirement.DeriveAllowedHosts(out)
		if e.LANHost == nil {
			// The ceiling is sorted; the pinned hosts are written API host
			// first, the one a test request goes to.
			if !slices.Equal(hosts, slices.Sorted(slices.Values(e.Hosts))) {
				t.Fatalf("borrowed ceiling %v, want exactly the pinned %v", hosts, e.Hosts)
			}
		} else if len(hosts) > 1 || (len(hosts) == 1 && (!requirement.IsRFC1918Literal(hosts[0]) || !slices.Equal(hosts, r.DeclaredAPIHosts))) {
			t.Fatalf("LAN borrow ceiling %v from declared %v", hosts, r.DeclaredAPIHosts)
		}
		if _, vs := requirement.Parse([]byte(out.Canonical()), requirement.Options{AllowUserLayer: true}); len(vs) > 0 {
			t.Fatalf("borrowed requirement does not parse: %v", vs)
		}
		again, err := g.Resolve(out)
		if err != nil || again.Requirement.Canonical() != out.Canonical() {
			t.Fatalf("a borrowed requirement does not resolve to itself: %v", err)
		}
	})
}

// FuzzLoadEntry decodes fuzzed entry files. Properties: the loader never
// panics; an entry it accepts has options that each pass requirement.Parse
// with AllowUserLayer and derive exactly its pinned hosts, and pinned
// hosts that are normal.
func FuzzLoadEntry(f *testing.F) {
	files, _ := filepath.Glob("data/*.json")
	more, _ := filepath.Glob("testdata/broken/*/acme.json")
	good, _ := filepath.Glob("testdata/good-protocol/*.json")
	more = append(more, good...)
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Base(name), b)
	}
	f.Fuzz(func(t *testing.T, name string, raw []byte) {
		l := &loader{}
		e := l.entry(name, raw)
		if e == nil {
			if len(l.errs) == 0 {
				t.Fatalf("entry refused without an error")
			}
			return
		}
		if len(l.errs) > 0 || len(e.options) == 0 {
			t.Fatalf("entry accepted with errors %v or no option", l.errs)
		}
		want := slices.Sorted(slices.Values(e.hosts))
		for _, h := range e.hosts {
			if n, err := requirement.NormalizeHost(h); err != nil || n != h {
				t.Fatalf("accepted a host that is not normal: %q", h)
			}
		}
		for _, o := range e.options {
			if _, vs := requirement.Parse([]byte(o.base.Canonical()), requirement.Options{AllowUserLayer: true}); len(vs) > 0 {
				t.Fatalf("accepted option %s does not parse: %v", o.id, vs)
			}
			if got := requirement.DeriveAllowedHosts(o.base); !slices.Equal(got, want) {
				t.Fatalf("accepted option %s derives %v, want %v", o.id, got, want)
			}
			if o.base.Kind == requirement.KindOAuth2AuthCode && e.revocation == nil {
				t.Fatalf("accepted sign-in option %s without a revocation seat", o.id)
			}
		}
		if rv := e.revocation; rv != nil {
			posts := rv.Method == RevokeRFC7009 || rv.Method == RevokeTokenClientID || rv.Method == RevokeBearer
			if !posts && rv.Method != RevokeGitHubGrant && rv.Method != RevokeNone {
				t.Fatalf("accepted revocation method %q", rv.Method)
			}
			for _, o := range e.options {
				if o.base.Kind.IsOAuth() && (o.base.Endpoints.Revoke != "") != posts {
					t.Fatalf("accepted method %s beside endpoints.revoke %q", rv.Method, o.base.Endpoints.Revoke)
				}
			}
			if (rv.URL != "") != (rv.Method == RevokeGitHubGrant) || (rv.ManageAccessURL != "" && !httpsAddress(rv.ManageAccessURL)) {
				t.Fatalf("accepted revocation %+v", *rv)
			}
		}
		if e.scopeSeparator != "" && e.scopeSeparator != "," {
			t.Fatalf("accepted scope separator %q", e.scopeSeparator)
		}
	})
}
