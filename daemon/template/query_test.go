package template_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/template"
)

// TestPlaceQuery places rendered pairs after the URL's own query, bytes
// preserved, each name and value percent-encoded.
func TestPlaceQuery(t *testing.T) {
	cases := []struct {
		url  string
		q    []template.Pair
		want string
	}{
		{"https://h/p", []template.Pair{{"appid", "k"}}, "https://h/p?appid=k"},
		{"https://h", []template.Pair{{"appid", "k"}}, "https://h?appid=k"},
		{"https://h/p?", []template.Pair{{"appid", "k"}}, "https://h/p?appid=k"},
		{"https://h/p?a=1&", []template.Pair{{"appid", "k"}}, "https://h/p?a=1&appid=k"},
		{"https://h/p?a=%7e&b=c+d&c=%2f&d", []template.Pair{{"appid", "k"}}, "https://h/p?a=%7e&b=c+d&c=%2f&d&appid=k"},
		{"https://h/p?a=1#frag?x", []template.Pair{{"appid", "k"}}, "https://h/p?a=1&appid=k#frag?x"},
		{"https://h/p#", []template.Pair{{"k", "v"}}, "https://h/p?k=v#"},
		{"https://h/p", []template.Pair{{"a", "1"}, {"b", "2"}}, "https://h/p?a=1&b=2"},
		{"https://h/p", []template.Pair{{"key", "a b+c&d=e?f#g/h%i"}}, "https://h/p?key=a%20b%2Bc%26d%3De%3Ff%23g%2Fh%25i"},
		{"https://h/p", []template.Pair{{"ids[]", "-._~"}}, "https://h/p?ids%5B%5D=-._~"},
		{"https://h/p", []template.Pair{{"k", "é\r\n\x00"}}, "https://h/p?k=%C3%A9%0D%0A%00"},
		{"https://h/p", []template.Pair{{"k", ""}}, "https://h/p?k="},
		{"https://h/p?x=1", nil, "https://h/p?x=1"},
	}
	for _, tc := range cases {
		got, err := template.PlaceQuery(tc.url, tc.q)
		if err != nil || got != tc.want {
			t.Errorf("PlaceQuery(%q, %v) = %q, %v; want %q", tc.url, tc.q, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		url string
		q   []template.Pair
	}{
		{"https://h/%zz", []template.Pair{{"k", "SECRET"}}},
		{"https://h/p", []template.Pair{{"", "SECRET"}}},
		{"http://[::1", []template.Pair{{"k", "SECRET"}}},
	} {
		got, err := template.PlaceQuery(bad.url, bad.q)
		if err == nil {
			t.Errorf("PlaceQuery(%q, %v) = %q, want an error", bad.url, bad.q, got)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), bad.url) {
			t.Errorf("PlaceQuery error = %q holds the url or a value", err)
		}
	}
}

// TestPlaceQueryRoundTrip decodes what PlaceQuery placed with net/url.
func TestPlaceQueryRoundTrip(t *testing.T) {
	q := []template.Pair{{"a", "x y"}, {"b[]", "1+1=2&3"}, {"c", "日本"}}
	got, err := template.PlaceQuery("https://h/p?z=0", q)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatalf("url.Parse(%q) = %v", got, err)
	}
	vals := u.Query()
	if vals.Get("z") != "0" {
		t.Errorf("existing parameter z = %q, want 0", vals.Get("z"))
	}
	for _, p := range q {
		if vals.Get(p.Name) != p.Value {
			t.Errorf("parameter %s = %q, want %q", p.Name, vals.Get(p.Name), p.Value)
		}
	}
}
