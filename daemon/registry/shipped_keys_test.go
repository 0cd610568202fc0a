package registry

import (
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// TestShippedKeyEntries checks that each API-key, personal-token and
// local-token entry pins what its provider's documentation says, as its
// source notes cite: the host, the kind, where the key goes (a header
// wherever the provider documents one, so the key stays out of URLs) and
// the test request. A LAN entry pins no host and keeps its one host the
// collected address.
//
// conformance: P3-C12.12-01, P3-C12.12-06, P3-C12.12-25
func TestShippedKeyEntries(t *testing.T) {
	g := shipped(t)
	type want struct {
		hosts  []string
		kind   requirement.Kind
		header map[string]string
		query  map[string]string
		test   string // "" when the entry says why it pins none
		lan    bool
	}
	cases := map[string]want{
		"alpha-vantage":  {hosts: []string{"www.alphavantage.co"}, kind: requirement.KindAPIKey, query: map[string]string{"apikey": "{{api_key}}"}, test: "/query?function=GLOBAL_QUOTE&symbol=IBM"},
		"finnhub":        {hosts: []string{"finnhub.io"}, kind: requirement.KindAPIKey, header: map[string]string{"X-Finnhub-Token": "{{api_key}}"}, test: "/api/v1/quote?symbol=AAPL"},
		"massive":        {hosts: []string{"api.massive.com"}, kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{api_key}}"}, test: "/v3/reference/dividends"},
		"twelve-data":    {hosts: []string{"api.twelvedata.com"}, kind: requirement.KindAPIKey, header: map[string]string{"Authorization": "apikey {{api_key}}"}, test: "/price?symbol=AAPL"},
		"newsapi":        {hosts: []string{"newsapi.org"}, kind: requirement.KindAPIKey, header: map[string]string{"X-Api-Key": "{{api_key}}"}, test: "/v2/top-headlines?country=us&pageSize=1"},
		"tmdb":           {hosts: []string{"api.themoviedb.org"}, kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{token}}"}, test: "/3/movie/11"},
		"discogs":        {hosts: []string{"api.discogs.com"}, kind: requirement.KindAPIKey, header: map[string]string{"Authorization": "Discogs token={{token}}"}, test: "/oauth/identity"},
		"mapbox":         {hosts: []string{"api.mapbox.com"}, kind: requirement.KindAPIKey, query: map[string]string{"access_token": "{{access_token}}"}, test: "/search/geocode/v6/forward?q=Los%20Angeles"},
		"google-maps":    {hosts: []string{"maps.googleapis.com"}, kind: requirement.KindAPIKey, query: map[string]string{"key": "{{api_key}}"}, test: "/maps/api/geocode/json?address=1600+Amphitheatre+Parkway,+Mountain+View,+CA"},
		"weatherapi":     {hosts: []string{"api.weatherapi.com"}, kind: requirement.KindAPIKey, query: map[string]string{"key": "{{api_key}}"}, test: "/v1/current.json?q=London"},
		"tomorrow-io":    {hosts: []string{"api.tomorrow.io"}, kind: requirement.KindAPIKey, header: map[string]string{"apikey": "{{api_key}}"}, test: "/v4/locations"},
		"readwise":       {hosts: []string{"readwise.io"}, kind: requirement.KindAPIKey, header: map[string]string{"Authorization": "Token {{token}}"}, test: "/api/v2/auth/"},
		"raindrop":       {hosts: []string{"api.raindrop.io"}, kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{token}}"}, test: "/rest/v1/user"},
		"openai":         {hosts: []string{"api.openai.com"}, kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{api_key}}"}, test: "/v1/models"},
		"ntfy":           {hosts: []string{"ntfy.sh"}, kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{token}}"}},
		"home-assistant": {kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{token}}"}, test: "/api/", lan: true},
		"jellyfin":       {kind: requirement.KindAPIKey, header: map[string]string{"Authorization": `MediaBrowser Token="{{api_key}}"`}, lan: true},
	}
	for id, w := range cases {
		t.Run(id, func(t *testing.T) {
			e, ok := g.Lookup(id)
			if !ok {
				t.Fatalf("Lookup(%q) = false", id)
			}
			if len(e.Options) != 1 {
				t.Fatalf("options = %d, want the one key option", len(e.Options))
			}
			o := e.Options[0]
			if len(e.Hosts) != len(w.hosts) || (len(w.hosts) > 0 && e.Hosts[0] != w.hosts[0]) {
				t.Errorf("Hosts = %v, want %v", e.Hosts, w.hosts)
			}
			if o.Kind != w.kind {
				t.Errorf("kind = %s, want %s", o.Kind, w.kind)
			}
			if !mapsEqual(o.Request.HeaderTemplate, w.header) || !mapsEqual(o.Request.QueryTemplate, w.query) {
				t.Errorf("templates = header %v query %v, want header %v query %v", o.Request.HeaderTemplate, o.Request.QueryTemplate, w.header, w.query)
			}
			var test string
			if e.TestRequest != nil {
				test = e.TestRequest.PathAndQuery
			}
			if test != w.test {
				t.Errorf("testRequest = %q, want %q", test, w.test)
			}
			if (e.LANHost != nil) != w.lan {
				t.Errorf("LANHost = %v, want LAN %v", e.LANHost, w.lan)
			}
			// Nothing here asks for a desktop or web sign-in, and no
			// entry claims browser reachability it has not sourced.
			if e.DesktopRedirect != "" || e.WebRedirect != "" || e.Pairing != nil || e.BrowserCallable != nil {
				t.Errorf("entry carries seats a key entry has no source for: desktop %q web %q pairing %v callable %v", e.DesktopRedirect, e.WebRedirect, e.Pairing, e.BrowserCallable)
			}
		})
	}
}
