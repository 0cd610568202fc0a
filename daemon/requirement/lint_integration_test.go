package requirement

import (
	"fmt"
	"strings"
	"testing"
)

// These tests run the real template lint (daemon/template) through Parse.

func headers(n int, value string) doc {
	d := doc{}
	for i := range n {
		d[fmt.Sprintf("X-H%d", i)] = value
	}
	return d
}

// checkLintRefused asserts that Parse refuses the mutation with a lint
// finding somewhere under prefix.
func checkLintRefused(t *testing.T, base func() doc, mut func(doc), opts Options, prefix string) {
	t.Helper()
	d := base()
	mut(d)
	raw := encode(t, d)
	r, vs := Parse(raw, opts)
	if r != nil {
		t.Fatalf("Parse(%s) accepted, want a template finding under %s", raw, prefix)
	}
	for _, v := range vs {
		if strings.HasPrefix(v.Path, prefix) && v.Rule != "" {
			return
		}
	}
	t.Fatalf("Parse(%s) = \n%swant a finding under %s", raw, violationList(vs), prefix)
}

// TestLintEnvelope: the template envelope bounds reach Parse's
// violations through the lint.
//
// conformance: P3-C12.5-19, P3-C12.5-20, P3-C12.5-21, P3-C12.5-22, P3-C12.5-23, P3-C12.5-24
func TestLintEnvelope(t *testing.T) {
	hdr := func(v any) func(doc) { return set("request", doc{"headerTemplate": v}) }
	qry := func(v any) func(doc) { return set("request", doc{"queryTemplate": v}) }
	tests := []struct {
		name   string
		ok     func(doc)
		bad    func(doc)
		prefix string
	}{
		{"header entries 8", hdr(headers(8, "v")), hdr(headers(9, "v")), "request.headerTemplate"},
		{"header name charset", hdr(doc{"X-Key": "{{api_key}}"}), hdr(doc{"X_Key": "{{api_key}}"}), "request.headerTemplate"},
		{"header name colon", hdr(doc{"Key-64-" + strings.Repeat("k", 57): "{{api_key}}"}), hdr(doc{"X:Key": "{{api_key}}"}), "request.headerTemplate"},
		{"header name 64", nil, hdr(doc{strings.Repeat("k", 65): "{{api_key}}"}), "request.headerTemplate"},
		{"header value 300", hdr(doc{"X-Key": strings.Repeat("v", 300)}), hdr(doc{"X-Key": strings.Repeat("v", 301)}), "request.headerTemplate"},
		{"query entries 8", qry(doc{"appid": "{{api_key}}", "a": "1", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1", "g": "1"}), qry(doc{"appid": "{{api_key}}", "a": "1", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1", "g": "1", "h": "1"}), "request.queryTemplate"},
		{"query name amp", qry(doc{"api_key": "{{api_key}}"}), qry(doc{"app&id": "{{api_key}}"}), "request.queryTemplate"},
		{"query name equals", qry(doc{"key[0]": "{{api_key}}"}), qry(doc{"a=b": "{{api_key}}"}), "request.queryTemplate"},
		{"query name hash", qry(doc{"a.b-c_d": "{{api_key}}"}), qry(doc{"a#b": "{{api_key}}"}), "request.queryTemplate"},
		{"query value 300", qry(doc{"appid": strings.Repeat("v", 300)}), qry(doc{"appid": strings.Repeat("v", 301)}), "request.queryTemplate"},
		{"host header", nil, hdr(doc{"Host": "evil.example"}), "request.headerTemplate"},
		{"content-length header", nil, hdr(doc{"Content-Length": "0"}), "request.headerTemplate"},
		{"transfer-encoding header", nil, hdr(doc{"Transfer-Encoding": "chunked"}), "request.headerTemplate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ok != nil {
				checkAccepted(t, baseDoc, tc.ok, Options{})
			}
			checkLintRefused(t, baseDoc, tc.bad, Options{}, "request")
		})
	}
}

// TestLintContent: Parse runs the content lint, with one resolution of the
// declared field keys for both placements (both layers' keys).
//
// conformance: P3-C12.8-04, P3-C12.9-03
func TestLintContent(t *testing.T) {
	t.Run("coinbase passes", func(t *testing.T) {
		mustParse(t, readTestdata(t, "coinbase-exchange.json"), Options{})
	})
	sign := "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}"
	typo := "{{hmac_sha256_b64(api_secrt, request.timestamp, request.method, request.pathAndQuery, request.body)}}"
	withSecret := set("fields", []any{
		doc{"key": "api_key", "label": "Key", "type": "text"},
		doc{"key": "api_secret", "label": "Secret", "type": "secret"},
	})
	for _, placement := range []string{"headerTemplate", "queryTemplate"} {
		t.Run(placement+" resolves declared keys", func(t *testing.T) {
			checkAccepted(t, baseDoc, all(withSecret, set("request", doc{placement: doc{"sig": sign}})), Options{})
		})
		t.Run(placement+" refuses a transposed key", func(t *testing.T) {
			checkLintRefused(t, baseDoc, all(withSecret, set("request", doc{placement: doc{"sig": typo}})), Options{}, "request."+placement)
		})
		t.Run(placement+" refuses an unknown token", func(t *testing.T) {
			checkLintRefused(t, baseDoc, set("request", doc{placement: doc{"x": "{{env.HOME}}"}}), Options{}, "request."+placement)
		})
		t.Run(placement+" refuses a nested call", func(t *testing.T) {
			checkLintRefused(t, baseDoc, set("request", doc{placement: doc{"x": "{{base64(hmac_sha256(api_key, request.body))}}"}}), Options{}, "request."+placement)
		})
	}
	t.Run("a field key that spells a helper", func(t *testing.T) {
		d := baseDoc()
		d["fields"] = []any{doc{"key": "timestamp", "label": "Key", "type": "text"}}
		d["request"] = doc{"queryTemplate": doc{"appid": "{{timestamp}}"}}
		if r, vs := Parse(encode(t, d), Options{}); r != nil {
			t.Errorf("Parse(field key timestamp) accepted, want a lint finding; got %v", vs)
		}
	})
	t.Run("userLayer keys resolve", func(t *testing.T) {
		checkAccepted(t, registryDoc, set("request", doc{"headerTemplate": doc{"X-User-App": "{{user_client_id}}"}}), Options{AllowUserLayer: true})
	})
	t.Run("findings never carry a credential", func(t *testing.T) {
		tok := "ghp_" + fake(70, 36, b62)
		d := baseDoc()
		d["request"] = doc{"headerTemplate": doc{"X-Key": "{{" + tok + "}}"}}
		_, vs := Parse(encode(t, d), Options{})
		if len(vs) == 0 {
			t.Fatal("Parse accepted a template naming an undeclared identifier")
		}
		for _, v := range vs {
			if leaks(v.Path+v.Message, tok) {
				t.Errorf("violation %v repeats the credential-shaped identifier", v)
			}
		}
	})
}
