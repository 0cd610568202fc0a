package requirement

import (
	"reflect"
	"strings"
	"testing"
)

// noneDoc returns a valid keyless requirement.
func noneDoc() doc {
	return doc{
		"slot":             "open-meteo",
		"provider":         doc{"name": "Open-Meteo"},
		"kind":             "none",
		"declaredApiHosts": []any{"api.open-meteo.com"},
		"testRequest":      doc{"method": "GET", "pathAndQuery": "/v1/forecast?latitude=52.52&longitude=13.41"},
	}
}

// linkedDoc returns a valid linked_device requirement addressed through
// the sidecar symbolic host.
func linkedDoc() doc {
	return doc{
		"slot":             "whatsapp",
		"provider":         doc{"name": "WhatsApp"},
		"kind":             "linked_device",
		"fields":           []any{doc{"key": "helper_token", "label": "Helper token", "type": "secret"}},
		"request":          doc{"headerTemplate": doc{"Authorization": "Bearer {{helper_token}}"}},
		"declaredApiHosts": []any{"whatsapp.sidecar.invalid"},
	}
}

// registryDoc returns a two-layer requirement as the registry synthesizes
// it: an org-level client-credentials layer and a user-level auth-code
// layer on its own hosts.
func registryDoc() doc {
	return doc{
		"slot":     "acme",
		"provider": doc{"name": "Acme Cloud"},
		"kind":     "oauth2_client_creds",
		"fields": []any{
			doc{"key": "client_id", "label": "Client ID", "type": "text"},
			doc{"key": "client_secret", "label": "Client secret", "type": "secret"},
		},
		"endpoints":        doc{"token": "https://auth.acme.example/oauth/token"},
		"declaredApiHosts": []any{"api.acme.example"},
		"userLayer": doc{
			"kind":             "oauth2_auth_code",
			"fields":           []any{doc{"key": "user_client_id", "label": "User app client ID", "type": "text"}},
			"endpoints":        doc{"authorize": "https://login.acme.example/authorize", "token": "https://login.acme.example/token", "revoke": "https://revoke.acme.example/r"},
			"scopes":           []any{"profile"},
			"declaredApiHosts": []any{"User.Acme.example"},
			"registration":     doc{"instructions": []any{"Create a user app."}},
		},
	}
}

// TestParseKinds: exactly seven kinds, each reads back as itself, and no
// option admits another.
//
// conformance: P3-C12.5-05, P3-C12.5-32, P3-C12.5-33
func TestParseKinds(t *testing.T) {
	if got := len(Kinds()); got != 7 {
		t.Fatalf("len(Kinds()) = %d, want 7", got)
	}
	wantOrder := []Kind{"api_key", "bearer_token", "basic_auth", "oauth2_client_creds", "oauth2_auth_code", "linked_device", "none"}
	if !reflect.DeepEqual(Kinds(), wantOrder) {
		t.Errorf("Kinds() = %v, want %v", Kinds(), wantOrder)
	}
	bases := map[Kind]func() doc{
		KindAPIKey: baseDoc, KindBearerToken: baseDoc, KindBasicAuth: baseDoc,
		KindOAuth2ClientCreds: oauthDoc, KindOAuth2AuthCode: oauthDoc,
		KindLinkedDevice: linkedDoc, KindNone: noneDoc,
	}
	for _, k := range Kinds() {
		t.Run(string(k), func(t *testing.T) {
			r := checkAccepted(t, bases[k], set("kind", string(k)), Options{})
			again := mustParse(t, []byte(r.Canonical()), Options{})
			if again.Kind != k {
				t.Errorf("kind %s read back as %s", k, again.Kind)
			}
		})
	}
	for _, opts := range []Options{{}, {AllowUserLayer: true}} {
		for _, bad := range []string{"pairing", "oauth1", "API_KEY", "api-key", "", "token_claim", "device_link"} {
			t.Run("refuses "+bad, func(t *testing.T) {
				checkRefused(t, baseDoc, set("kind", bad), opts, "kind", RuleKindUnknown)
			})
		}
	}
	t.Run("kind missing", func(t *testing.T) {
		checkRefused(t, baseDoc, del("kind"), Options{}, "kind", RuleKeyMissing)
	})
	t.Run("kind not a string", func(t *testing.T) {
		checkRefused(t, baseDoc, set("kind", 1), Options{}, "kind", RuleTypeMismatch)
	})
}

// TestParseKindNone: no fields, no template in either placement, hosts
// still required.
//
// conformance: P3-C12.5-34, P3-C12.5-35, P3-C12.5-36
func TestParseKindNone(t *testing.T) {
	checkAccepted(t, noneDoc, func(doc) {}, Options{})
	checkAccepted(t, noneDoc, set("request", doc{}), Options{})
	tests := []struct {
		name string
		mut  func(doc)
		path string
		rule string
	}{
		{"fields", set("fields", []any{fieldDoc(0)}), "fields", RuleKindSeatForbidden},
		{"empty fields", set("fields", []any{}), "fields", RuleKindSeatForbidden},
		{"header template", set("request", doc{"headerTemplate": doc{"X-Key": "static"}}), "request.headerTemplate", RuleKindSeatForbidden},
		{"query template", set("request", doc{"queryTemplate": doc{"appid": "demo"}}), "request.queryTemplate", RuleKindSeatForbidden},
		{"empty query template", set("request", doc{"queryTemplate": doc{}}), "request.queryTemplate", RuleKindSeatForbidden},
		{"no hosts", del("declaredApiHosts"), "declaredApiHosts", RuleHostsRequired},
		{"no hosts beside a lanHost", all(del("declaredApiHosts"), set("lanHost", doc{"class": "rfc1918-ipv4-literal", "label": "Device"})), "declaredApiHosts", RuleHostsRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, noneDoc, tc.mut, Options{}, tc.path, tc.rule)
		})
	}
	t.Run("post-collection lan none", func(t *testing.T) {
		checkAccepted(t, noneDoc, all(set("declaredApiHosts", []any{"10.0.0.7"}), set("lanHost", doc{"class": "rfc1918-ipv4-literal", "label": "Device"})), Options{})
	})
}

// TestParseKindLinkedDevice: at least one field, no endpoints, no lanHost.
//
// conformance: P3-C12.5-38, P3-C12.5-39, P3-C12.5-40
func TestParseKindLinkedDevice(t *testing.T) {
	checkAccepted(t, linkedDoc, func(doc) {}, Options{})
	checkAccepted(t, linkedDoc, field(0, "type", "text"), Options{}) // any type
	tests := []struct {
		name string
		mut  func(doc)
		path string
		rule string
	}{
		{"no fields", del("fields"), "fields", RuleKindSeatRequired},
		{"empty fields", set("fields", []any{}), "fields", RuleArrayTooShort},
		{"refresh endpoint", set("endpoints", doc{"refresh": "https://refresh.example.com/r"}), "endpoints", RuleKindSeatForbidden},
		{"empty endpoints", set("endpoints", doc{}), "endpoints", RuleKindSeatForbidden},
		{"lanHost", set("lanHost", doc{"class": "rfc1918-ipv4-literal", "label": "Helper"}), "lanHost", RuleKindSeatForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, linkedDoc, tc.mut, Options{}, tc.path, tc.rule)
		})
	}
}

// TestParsePKCEDefault: both OAuth kinds default pkce to true; an explicit
// false stays false; other kinds keep what they said.
//
// conformance: P3-C12.5-41, P3-C12.5-42
func TestParsePKCEDefault(t *testing.T) {
	tests := []struct {
		kind string
		mut  func(doc)
		want *bool
	}{
		{"oauth2_auth_code", del("pkce"), ptr(true)},
		{"oauth2_client_creds", del("pkce"), ptr(true)},
		{"oauth2_auth_code", set("pkce", false), ptr(false)},
		{"oauth2_client_creds", set("pkce", true), ptr(true)},
		{"api_key", del("pkce"), nil},
		{"bearer_token", set("pkce", false), ptr(false)},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			r := checkAccepted(t, oauthDoc, all(set("kind", tc.kind), tc.mut), Options{})
			if !reflect.DeepEqual(r.PKCE, tc.want) {
				t.Errorf("Parse(kind %s).PKCE = %v, want %v", tc.kind, deref(r.PKCE), deref(tc.want))
			}
		})
	}
	t.Run("default is explicit in the canonical form", func(t *testing.T) {
		implicit := checkAccepted(t, oauthDoc, del("pkce"), Options{})
		explicit := checkAccepted(t, oauthDoc, set("pkce", true), Options{})
		if implicit.Canonical() != explicit.Canonical() {
			t.Errorf("Canonical(no pkce) = %s, want %s", implicit.Canonical(), explicit.Canonical())
		}
	})
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// TestParseHostXOR walks the host XOR table row by row.
//
// conformance: P3-C12.11-02, P3-C12.11-03, P3-C12.11-04, P3-C12.11-05, P3-C12.11-06, P3-C12.11-07, P3-C12.11-08
func TestParseHostXOR(t *testing.T) {
	t.Run("row 1: no lanHost, 1..32 hosts, accepted", func(t *testing.T) {
		checkAccepted(t, baseDoc, func(doc) {}, Options{})
	})
	t.Run("row 2: no lanHost, hosts absent, refused", func(t *testing.T) {
		checkRefused(t, baseDoc, del("declaredApiHosts"), Options{}, "declaredApiHosts", RuleHostsRequired)
	})
	t.Run("row 2: no lanHost, hosts [], refused", func(t *testing.T) {
		checkRefused(t, baseDoc, set("declaredApiHosts", []any{}), Options{}, "declaredApiHosts", RuleArrayTooShort)
	})
	t.Run("row 3: lanHost, hosts absent, accepted (pre-collection)", func(t *testing.T) {
		r := checkAccepted(t, lanDoc, func(doc) {}, Options{})
		if r.DeclaredAPIHosts != nil {
			t.Errorf("DeclaredAPIHosts = %v, want nil", r.DeclaredAPIHosts)
		}
	})
	t.Run("row 4: lanHost, one RFC-1918 literal, accepted (post-collection)", func(t *testing.T) {
		r := checkAccepted(t, lanDoc, set("declaredApiHosts", []any{"192.168.1.20"}), Options{})
		if want := []string{"192.168.1.20"}; !reflect.DeepEqual(r.DeclaredAPIHosts, want) {
			t.Errorf("DeclaredAPIHosts = %v, want %v", r.DeclaredAPIHosts, want)
		}
	})
	t.Run("row 5: lanHost, a host outside the class, refused", func(t *testing.T) {
		checkRefused(t, lanDoc, set("declaredApiHosts", []any{"api.hue.com"}), Options{}, "declaredApiHosts[0]", RuleLANHostOffClass)
	})
	t.Run("row 5: lanHost, two hosts, refused", func(t *testing.T) {
		checkRefused(t, lanDoc, set("declaredApiHosts", []any{"192.168.1.20", "192.168.1.21"}), Options{}, "declaredApiHosts", RuleLANHostCount)
	})
	t.Run("row 5: lanHost, a literal and a public host, refused", func(t *testing.T) {
		vs := checkRefused(t, lanDoc, set("declaredApiHosts", []any{"192.168.1.20", "api.hue.com"}), Options{}, "declaredApiHosts", RuleLANHostCount)
		if !hasViolation(vs, "declaredApiHosts[1]", RuleLANHostOffClass) {
			t.Errorf("violations = \n%swant also %s at declaredApiHosts[1]", violationList(vs), RuleLANHostOffClass)
		}
	})
	t.Run("row 5: lanHost, [], refused", func(t *testing.T) {
		checkRefused(t, lanDoc, set("declaredApiHosts", []any{}), Options{}, "declaredApiHosts", RuleArrayTooShort)
	})
}

// TestParseLANHostIsTheOnlyHostSource: beside a lanHost nothing else may
// put a host into the ceiling. An endpoint or a userLayer would freeze a
// public host into a ceiling the review screen presents as a device on the
// user's own network, and a pre-collection row would derive a non-empty
// ceiling before any address exists.
//
// conformance: P3-C12.5-48, P3-C12.11-06
func TestParseLANHostIsTheOnlyHostSource(t *testing.T) {
	endpoint := set("endpoints", doc{"token": "https://collector.example/token"})
	tests := []struct {
		name string
		mut  func(doc)
		opts Options
		path string
	}{
		{"pre-collection with an endpoint", endpoint, Options{}, "endpoints"},
		{"post-collection with an endpoint", all(endpoint, set("declaredApiHosts", []any{"192.168.1.20"})), Options{}, "endpoints"},
		{"OAuth kind with an endpoint", all(set("kind", "oauth2_client_creds"), endpoint), Options{}, "endpoints"},
		{"empty endpoints object", set("endpoints", doc{}), Options{}, "endpoints"},
		{"registry userLayer with a host", set("userLayer", doc{"kind": "api_key", "declaredApiHosts": []any{"collector.example"}}),
			Options{AllowUserLayer: true}, "userLayer"},
		{"registry userLayer with an endpoint", set("userLayer", doc{"kind": "oauth2_client_creds", "endpoints": doc{"token": "https://collector.example/t"}}),
			Options{AllowUserLayer: true}, "userLayer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, lanDoc, tc.mut, tc.opts, tc.path, RuleLANHostOffClass)
		})
	}
}

// TestParseLANClass: the class admits only a canonical RFC-1918 dotted
// quad, and an RFC-1918 literal is an IP literal on any other row.
//
// conformance: P3-C12.11-01
func TestParseLANClass(t *testing.T) {
	for _, h := range []string{"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254", "192.168.0.1", "192.168.255.255"} {
		t.Run("accepts "+h, func(t *testing.T) {
			checkAccepted(t, lanDoc, set("declaredApiHosts", []any{h}), Options{})
		})
	}
	for _, h := range []string{
		"172.32.0.1", "172.15.255.255", "8.8.8.8", "127.0.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
		"hue.local", "010.0.0.1", "10.1", "167772161", "0xa.0.0.1", "::ffff:10.0.0.1", "fd00::1",
		" 10.0.0.1", "10.0.0.1.", "10.0.0.1:80", "10.0.0.１",
	} {
		t.Run("refuses "+h, func(t *testing.T) {
			checkRefused(t, lanDoc, set("declaredApiHosts", []any{h}), Options{}, "declaredApiHosts[0]", RuleLANHostOffClass)
		})
	}
	t.Run("RFC-1918 literal without lanHost", func(t *testing.T) {
		checkRefused(t, baseDoc, set("declaredApiHosts", []any{"192.168.1.20"}), Options{}, "declaredApiHosts[0]", RuleHostIPLiteral)
	})
}

// TestParseUserLayerChannel: userLayer is admitted only when the registry's
// substitution code says so, whatever it contains.
//
// conformance: P3-C12.10-01, P3-C12.10-02, P3-C12.10-03, P3-C12.10-04, P3-C12.10-05, P3-C12.10-06
func TestParseUserLayerChannel(t *testing.T) {
	t.Run("registry keeps its userLayer", func(t *testing.T) {
		r := checkAccepted(t, registryDoc, func(doc) {}, Options{AllowUserLayer: true})
		want := &UserLayer{
			Kind:   KindOAuth2AuthCode,
			Fields: []Field{{Key: "user_client_id", Label: "User app client ID", Type: FieldText}},
			Endpoints: Endpoints{
				Authorize: "https://login.acme.example/authorize", Token: "https://login.acme.example/token",
				Revoke: "https://revoke.acme.example/r",
			},
			Scopes:           []string{"profile"},
			PKCE:             ptr(true),
			DeclaredAPIHosts: []string{"user.acme.example"},
			Registration:     Registration{Instructions: []string{"Create a user app."}},
		}
		if !reflect.DeepEqual(r.UserLayer, want) {
			t.Errorf("UserLayer = %#v, want %#v", r.UserLayer, want)
		}
	})
	// Every other channel parses with the zero Options (the daemon's
	// channel code must never set AllowUserLayer for them).
	for _, channel := range []string{"assistant directive", "starter manifest", "user docs", "user entry", "import"} {
		t.Run(channel+" refuses it", func(t *testing.T) {
			checkRefused(t, registryDoc, func(doc) {}, Options{}, "userLayer", RuleUserLayerChannel)
		})
	}
	t.Run("genuine provider URLs do not help", func(t *testing.T) {
		vs := checkRefused(t, oauthDoc, set("userLayer", doc{
			"kind":      "oauth2_auth_code",
			"endpoints": doc{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
		}), Options{}, "userLayer", RuleUserLayerChannel)
		if len(vs) != 1 {
			t.Errorf("violations = \n%swant only the channel refusal", violationList(vs))
		}
	})
	t.Run("content is not read on a refused channel", func(t *testing.T) {
		vs := checkRefused(t, baseDoc, set("userLayer", "not even an object"), Options{}, "userLayer", RuleUserLayerChannel)
		if len(vs) != 1 {
			t.Errorf("violations = \n%swant only the channel refusal", violationList(vs))
		}
	})
}

// TestParseUserLayerBounds validates the userLayer with the same bounds and
// kind rules as the requirement itself.
func TestParseUserLayerBounds(t *testing.T) {
	opts := Options{AllowUserLayer: true}
	ul := func(key string, v any) func(doc) {
		return func(d doc) { d["userLayer"].(doc)[key] = v }
	}
	tests := []struct {
		name string
		mut  func(doc)
		path string
		rule string
	}{
		{"not an object", set("userLayer", []any{}), "userLayer", RuleTypeMismatch},
		{"kind missing", func(d doc) { delete(d["userLayer"].(doc), "kind") }, "userLayer.kind", RuleKeyMissing},
		{"kind unknown", ul("kind", "oauth1"), "userLayer.kind", RuleKindUnknown},
		{"field key pattern", ul("fields", []any{doc{"key": "Bad", "label": "x", "type": "text"}}), "userLayer.fields[0].key", RuleFieldKeyPattern},
		{"field key shared with the outer layer", ul("fields", []any{doc{"key": "client_id", "label": "x", "type": "text"}}), "userLayer.fields[0].key", RuleFieldKeyDuplicate},
		{"fields 9", ul("fields", list(9, fieldDoc)), "userLayer.fields", RuleArrayTooLong},
		{"endpoint http", ul("endpoints", doc{"token": "http://login.acme.example/token"}), "userLayer.endpoints.token", RuleURLScheme},
		{"scope 201", ul("scopes", []any{strings.Repeat("s", 201)}), "userLayer.scopes[0]", RuleStringTooLong},
		{"hosts []", ul("declaredApiHosts", []any{}), "userLayer.declaredApiHosts", RuleArrayTooShort},
		{"host ip", ul("declaredApiHosts", []any{"10.0.0.1"}), "userLayer.declaredApiHosts[0]", RuleHostIPLiteral},
		{"reserved param", ul("authorizeParams", doc{"redirect_uri": "https://evil.example/cb"}), "userLayer.authorizeParams.redirect_uri", RuleAuthorizeParamReserved},
		{"instruction markup", ul("registration", doc{"instructions": []any{"<a href=x>go</a>"}}), "userLayer.registration.instructions[0]", RuleTextMarkup},
		{"none with fields", ul("kind", "none"), "userLayer.fields", RuleKindSeatForbidden},
		{"linked_device with endpoints", ul("kind", "linked_device"), "userLayer.endpoints", RuleKindSeatForbidden},
		{"linked_device without fields", all(ul("kind", "linked_device"), func(d doc) {
			delete(d["userLayer"].(doc), "fields")
			delete(d["userLayer"].(doc), "endpoints")
		}), "userLayer.fields", RuleKindSeatRequired},
		{"credential", ul("fields", []any{doc{"key": "k", "label": "x", "type": "text", "placeholder": "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"}}), "userLayer.fields[0].placeholder", RuleCredentialDetected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, registryDoc, tc.mut, opts, tc.path, tc.rule)
		})
	}
	t.Run("outer hosts stay required", func(t *testing.T) {
		checkRefused(t, registryDoc, del("declaredApiHosts"), opts, "declaredApiHosts", RuleHostsRequired)
	})
}
