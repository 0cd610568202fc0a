package daemon

import (
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/requirement"
)

// conformance: P3-U15-02, P3-U15-03, P3-U15-04, P3-U15-05, P3-U15-06, P3-U15-07, P3-U15-08, P3-U15-09, P3-U15-10, P3-U15-11
func TestParseConnectionURL(t *testing.T) {
	cases := []struct {
		in       string
		kind     fetch.ConnURLKind
		slot, pq string
	}{
		{"snug-connection://hue/api/lights", fetch.ConnectionURLOK, "hue", "/api/lights"},
		{"SNUG-CONNECTION://hue/x", fetch.ConnectionURLOK, "hue", "/x"},
		{"Snug-Connection://hue/x?a=1&b=%20", fetch.ConnectionURLOK, "hue", "/x?a=1&b=%20"},
		{"snug-connection://hue/@evil.com", fetch.ConnectionURLOK, "hue", "/@evil.com"},
		{"snug-connection://hue/", fetch.ConnectionURLOK, "hue", "/"},
		{"snug-connection://Hue/x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection:hue/x", fetch.ConnectionURLMalformed, "", ""},
		// The bare scheme is a connection URL without "//": malformed,
		// not some other kind of URL.
		{"snug-connection:", fetch.ConnectionURLMalformed, "", ""},
		{"SNUG-CONNECTION:", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection:/hue/x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue?x=1", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://a_b/x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://-a/x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection:///x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue//evil.com/x", fetch.ConnectionURLMalformed, "", ""},
		{`snug-connection://hue/a\b`, fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue/a#b", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://user@hue/x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue:443/x", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue/a b", fetch.ConnectionURLMalformed, "", ""},
		{"snug-connection://hue/%zz", fetch.ConnectionURLMalformed, "", ""},
		{"https://x.com/", fetch.NotConnectionURL, "", ""},
		{"snug-connectio://hue/x", fetch.NotConnectionURL, "", ""},
		{"snug-connections://hue/x", fetch.NotConnectionURL, "", ""},
		{"", fetch.NotConnectionURL, "", ""},
	}
	for _, tc := range cases {
		got, kind := fetch.ParseConnectionURL(tc.in)
		if kind != tc.kind || got.Slot != tc.slot || got.PathAndQuery != tc.pq {
			t.Errorf("parseConnectionURL(%q) = %+v, %d; want {%s %s}, %d", tc.in, got, kind, tc.slot, tc.pq, tc.kind)
		}
	}
}

// conformance: P3-U15-01, P3-U15-12, P3-U15-13, P3-U15-14, P3-U15-15, P3-U15-16, P3-U15-17, P3-U15-18, P3-U15-19, P3-X14-06
func TestConnectionURLResolution(t *testing.T) {
	t.Run("resolves to the one ceiling host by composition", func(t *testing.T) {
		r := newRig(t)
		r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
		appURL := "snug-connection://ex/@evil.com?x=1"
		res, resp := r.net(t, "app1", frame("GET", appURL, nil))
		if res.Code != "" {
			t.Fatalf("Net = %q", res.Code)
		}
		got := r.up.last(t)
		if got.Host != apiHost || !strings.HasPrefix(got.URI, "/@evil.com?x=1&appid=") {
			t.Errorf("upstream got host %q uri %q; want /@evil.com on %s", got.Host, got.URI, apiHost)
		}
		if resp.URL != appURL || strings.Contains(string(res.Frame), apiHost) {
			t.Errorf("answer discloses the resolved host or another url: %s", res.Frame)
		}
	})
	t.Run("confirm discloses the resolved host", func(t *testing.T) {
		r := newRig(t)
		r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
		seen := r.autoDecide(t, true, fetch.RememberOnce)
		res, _ := r.net(t, "app1", frame("POST", "snug-connection://ex/v1/send", map[string]any{"body": `{"a":1}`}))
		if res.Code != "" {
			t.Fatalf("Net = %q", res.Code)
		}
		c := <-seen
		if c.Host != apiHost || c.URL != "https://api.example.com/v1/send" || c.Slot != "ex" || c.Body != `{"a":1}` || c.Method != "POST" {
			t.Errorf("confirm = %+v", c)
		}
		if strings.Contains(c.URL, "appid") {
			t.Errorf("confirm url carries the query credential: %s", c.URL)
		}
	})
	cases := []struct {
		name  string
		setup func(t *testing.T, r *rig)
		url   string
		want  errcode.Code
	}{
		{"unknown slot", nil, "snug-connection://nope/x", errcode.NetInvalidRequest},
		{"another app's slot", func(t *testing.T, r *rig) {
			r.connect(t, "other", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
		}, "snug-connection://ex/x", errcode.NetInvalidRequest},
		{"declared slot", func(t *testing.T, r *rig) { r.declare(t, "app1", apiKeyReq("ex", apiHost)) }, "snug-connection://ex/x", errcode.NetNotApproved},
		{"imported slot", func(t *testing.T, r *rig) {
			forgeRow(t, r, storeRow("app1", "ex", canonical(t, apiKeyReq("ex", apiHost)), true))
		}, "snug-connection://ex/x", errcode.NetImportedUnapproved},
		{"two-host ceiling", func(t *testing.T, r *rig) {
			r.connect(t, "app1", apiKeyReq("ex", apiHost, "b.example.com"), map[string]string{"api_key": secretKey})
		}, "snug-connection://ex/x", errcode.NetAmbiguousConnection},
		{"empty ceiling", func(t *testing.T, r *rig) {
			v := lanReq("hue", "192.168.1.20")
			delete(v, "declaredApiHosts")
			r.connect(t, "app1", v, nil)
		}, "snug-connection://hue/x", errcode.NetAmbiguousConnection},
		{"resolved host still unique at gate 3", func(t *testing.T, r *rig) {
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.connect(t, "app1", noneReq("open", apiHost, "b.example.com"), nil)
		}, "snug-connection://ex/x", errcode.NetAmbiguousConnection},
		{"malformed", nil, "snug-connection://ex//evil.com", errcode.NetInvalidRequest},
		{"LAN row without a pin fails host-clean", func(t *testing.T, r *rig) {
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
		}, "snug-connection://hue/clip/v2/resource", errcode.NetFetchFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(t, r)
			}
			res, resp := r.net(t, "app1", frame("GET", tc.url, nil))
			if res.Code != tc.want {
				t.Fatalf("Net(%s) = %q, want %q", tc.url, res.Code, tc.want)
			}
			for _, leak := range []string{"192.168", apiHost, "example.com"} {
				if strings.Contains(string(res.Frame), leak) {
					t.Errorf("refusal discloses %q: %s", leak, res.Frame)
				}
			}
			if resp.URL != tc.url {
				t.Errorf("url = %q, want the app's", resp.URL)
			}
		})
	}
}

func TestScrubResolved(t *testing.T) {
	c := &fetch.ConnTarget{Slot: "hue", Host: "192.168.1.20"}
	if got := c.ScrubResolved("dial 192.168.1.20:443 and 192.168.1.20 again"); strings.Contains(got, "192.168") {
		t.Errorf("scrubResolved = %q", got)
	}
	c = &fetch.ConnTarget{Slot: "ex", Host: "api.example.com"}
	if got := c.ScrubResolved("GET https://API.Example.com/x — é"); strings.Contains(strings.ToLower(got), "api.example.com") || !strings.HasSuffix(got, "é") {
		t.Errorf("scrubResolved = %q", got)
	}
}

// FuzzParseConnectionURL checks the grammar's invariants: a parse that
// succeeds has a valid slot and a pathAndQuery that begins with one '/'
// and holds no '\' or '#', and composing it keeps the host; a string
// without the scheme is never a connection URL.
func FuzzParseConnectionURL(f *testing.F) {
	for _, s := range []string{"snug-connection://hue/api", "SNUG-CONNECTION://a/@evil.com", "snug-connection://hue//x", "https://x.com/", "snug-connection://a/%2F%2e?x#y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cu, kind := fetch.ParseConnectionURL(s)
		hasScheme := len(s) >= len(fetch.ConnectionScheme) && strings.EqualFold(s[:len(fetch.ConnectionScheme)], fetch.ConnectionScheme)
		if !hasScheme && kind != fetch.NotConnectionURL {
			t.Fatalf("parseConnectionURL(%q) = %d without the scheme", s, kind)
		}
		if hasScheme && kind == fetch.NotConnectionURL {
			t.Fatalf("parseConnectionURL(%q) fell through with the scheme", s)
		}
		if kind != fetch.ConnectionURLOK {
			return
		}
		if !requirement.ValidSlot(cu.Slot) || !strings.HasPrefix(cu.PathAndQuery, "/") || strings.HasPrefix(cu.PathAndQuery, "//") || strings.ContainsAny(cu.PathAndQuery, `\#`) {
			t.Fatalf("parseConnectionURL(%q) = %+v breaks the grammar", s, cu)
		}
		u, err := fetch.ComposeURL("https", "api.example.com", cu.PathAndQuery)
		if err != nil {
			t.Fatalf("composeURL(%q) = %v", cu.PathAndQuery, err)
		}
		if u.Host != "api.example.com" || u.User != nil {
			t.Fatalf("composeURL(%q) moved the host: %s", cu.PathAndQuery, u)
		}
		if v, err := u.Parse(u.String()); err != nil || v.Host != "api.example.com" {
			t.Fatalf("composed %q reparses to host %v (%v)", u, v, err)
		}
	})
}
