package template_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/snug/snugd/daemon/template"
)

// RFC 8032 section 7.1, TEST 1.
const (
	rfc8032Secret = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	rfc8032Public = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
)

func rfc8032Key(t testing.TB) (seed, pub []byte) {
	t.Helper()
	seed, err := hex.DecodeString(rfc8032Secret)
	if err != nil {
		t.Fatal(err)
	}
	pub, err = hex.DecodeString(rfc8032Public)
	if err != nil {
		t.Fatal(err)
	}
	return seed, pub
}

const cdpKeyName = "organizations/0b8f5c3e-1d2a-4c6b-9e7f-a1b2c3d4e5f6/apiKeys/7c1e2d3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f"

func cdpSet(t testing.TB) *template.Set {
	return mustCompile(t, []string{"key_name", "private_key"}, template.Templates{Header: map[string]string{
		"Authorization": "Bearer {{cdp_jwt(key_name, private_key)}}",
		"X-Ts":          "{{request.timestamp}}",
	}})
}

// verifyCDPJWT verifies a token with golang-jwt, an implementation
// independent of ours, against the RFC 8032 public key.
func verifyCDPJWT(t *testing.T, token string, pub []byte, ts int64) *jwt.Token {
	t.Helper()
	tok, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return ed25519.PublicKey(pub), nil },
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithIssuer("cdp"),
		jwt.WithAudience("cdp_service"),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return time.Unix(ts+60, 0) }),
	)
	if err != nil {
		t.Fatalf("jwt.Parse(%q) = %v", token, err)
	}
	return tok
}

// TestCDPJWT signs with the RFC 8032 TEST 1 key, in both key forms, and
// verifies the token with golang-jwt: signature, header, claims, lifetime
// and the uris entry the CDP SDK would form.
// conformance: P3-C12.8-10, P3-C12.8-12
func TestCDPJWT(t *testing.T) {
	seed, pub := rfc8032Key(t)
	keys := map[string]string{
		"64-byte":          base64.StdEncoding.EncodeToString(append(append([]byte{}, seed...), pub...)),
		"32-byte seed":     base64.StdEncoding.EncodeToString(seed),
		"64-byte unpadded": base64.RawStdEncoding.EncodeToString(append(append([]byte{}, seed...), pub...)),
	}
	urls := []struct {
		method, url, want string
	}{
		{"GET", "https://api.cdp.coinbase.com/platform/v2/evm/accounts?pageSize=2&pageToken=x", "GET api.cdp.coinbase.com/platform/v2/evm/accounts"},
		{"POST", "https://API.cdp.coinbase.com:443/platform/v2/evm/accounts", "POST api.cdp.coinbase.com/platform/v2/evm/accounts"},
		{"GET", "https://api.example.test:8443/a%20b/c?q", "GET api.example.test:8443/a%20b/c"},
		{"GET", "http://api.example.test:80", "GET api.example.test/"},
		{"DELETE", "https://api.example.test", "DELETE api.example.test/"},
	}
	set := cdpSet(t)
	for name, key := range keys {
		for _, u := range urls {
			t.Run(name+" "+u.method+" "+u.url, func(t *testing.T) {
				env, _ := countingEnv()
				out, err := set.Render(map[string]string{"key_name": cdpKeyName, "private_key": key},
					template.Request{Method: u.method, URL: u.url}, env)
				if err != nil {
					t.Fatalf("Render = %v", err)
				}
				h := headerMap(out.Headers)
				token, ok := strings.CutPrefix(h["Authorization"], "Bearer ")
				if !ok {
					t.Fatalf("Authorization = %q, want a bearer token", h["Authorization"])
				}
				for _, seg := range strings.Split(token, ".") {
					if strings.ContainsAny(seg, "=+/") {
						t.Errorf("segment %q is not base64url without padding", seg)
					}
				}
				ts := fixedNow().Unix()
				tok := verifyCDPJWT(t, token, pub, ts)
				wantHeader := map[string]any{"alg": "EdDSA", "kid": cdpKeyName, "typ": "JWT", "nonce": "000102030405060708090a0b0c0d0e0f"}
				if len(tok.Header) != len(wantHeader) {
					t.Errorf("header = %v, want %v", tok.Header, wantHeader)
				}
				for k, v := range wantHeader {
					if tok.Header[k] != v {
						t.Errorf("header %s = %v, want %v", k, tok.Header[k], v)
					}
				}
				c := tok.Claims.(jwt.MapClaims)
				if c["sub"] != cdpKeyName || c["iss"] != "cdp" {
					t.Errorf("claims sub, iss = %v, %v", c["sub"], c["iss"])
				}
				if aud, _ := c["aud"].([]any); len(aud) != 1 || aud[0] != "cdp_service" {
					t.Errorf("claim aud = %#v, want [cdp_service]", c["aud"])
				}
				nbf, iat, exp := c["nbf"].(float64), c["iat"].(float64), c["exp"].(float64)
				if exp-nbf != 120 || nbf != iat || int64(nbf) != ts {
					t.Errorf("nbf, iat, exp = %v, %v, %v; want %d, %d, %d", nbf, iat, exp, ts, ts, ts+120)
				}
				if h["X-Ts"] != fmt.Sprint(int64(nbf)) {
					t.Errorf("X-Ts = %q, nbf = %v: the pass has one timestamp", h["X-Ts"], nbf)
				}
				if uris, _ := c["uris"].([]any); len(uris) != 1 || uris[0] != u.want {
					t.Errorf("claim uris = %#v, want [%q]", c["uris"], u.want)
				}
			})
		}
	}
}

// TestCDPJWTWrongKeyFails shows the verification above can fail: a token
// checked against another public key is refused.
func TestCDPJWTWrongKeyFails(t *testing.T) {
	seed, _ := rfc8032Key(t)
	out, err := cdpSet(t).Render(map[string]string{"key_name": "k", "private_key": base64.StdEncoding.EncodeToString(seed)},
		template.Request{Method: "GET", URL: "https://h/"}, template.Env{Now: fixedNow})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	token := strings.TrimPrefix(headerMap(out.Headers)["Authorization"], "Bearer ")
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	_, err = jwt.Parse(token, func(*jwt.Token) (any, error) { return other, nil },
		jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(fixedNow))
	if !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		t.Errorf("jwt.Parse with another key = %v, want ErrTokenSignatureInvalid", err)
	}
}

// TestCDPJWTKeyName escapes a key name that would break out of its JSON
// string: the header stays {alg: EdDSA, …} whatever the input.
// conformance: P3-C12.8-12
func TestCDPJWTKeyName(t *testing.T) {
	seed, pub := rfc8032Key(t)
	for _, name := range []string{`k","alg":"none`, "k\\\"\n\x00\u2028é", `{"alg":"HS256"}`} {
		out, err := cdpSet(t).Render(map[string]string{"key_name": name, "private_key": base64.StdEncoding.EncodeToString(seed)},
			template.Request{Method: "GET", URL: "https://h/p"}, template.Env{Now: fixedNow})
		if err != nil {
			t.Fatalf("Render(key name %q) = %v", name, err)
		}
		token := strings.TrimPrefix(headerMap(out.Headers)["Authorization"], "Bearer ")
		tok := verifyCDPJWT(t, token, pub, fixedNow().Unix())
		if tok.Header["alg"] != "EdDSA" || tok.Header["kid"] != name || tok.Claims.(jwt.MapClaims)["sub"] != name {
			t.Errorf("key name %q: header %v, sub %v", name, tok.Header, tok.Claims.(jwt.MapClaims)["sub"])
		}
		raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
		var hdr map[string]any
		if err := json.Unmarshal(raw, &hdr); err != nil || len(hdr) != 4 {
			t.Errorf("key name %q: header JSON %s = %v, %v", name, raw, hdr, err)
		}
	}
}

// TestCDPJWTRefusesOtherKeys: Ed25519 only. A PEM EC key, a key of another
// length, a 64-byte key whose public half is not its seed's, and text that
// is not base64 are render errors naming the field, never the value.
// conformance: P3-C12.8-12
func TestCDPJWTRefusesOtherKeys(t *testing.T) {
	seed, pub := rfc8032Key(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	mismatched := append(append([]byte{}, seed...), pub...)
	mismatched[40] ^= 1
	keys := map[string]string{
		"PEM EC key":       string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})),
		"48 bytes":         base64.StdEncoding.EncodeToString(make([]byte, 48)),
		"31 bytes":         base64.StdEncoding.EncodeToString(seed[:31]),
		"mismatched":       base64.StdEncoding.EncodeToString(mismatched),
		"not base64":       "this is not a key!",
		"base64url":        base64.RawURLEncoding.EncodeToString(append(append([]byte{}, seed...), 0xff, 0xfb)),
		"hex seed":         rfc8032Secret,
		"seed with a CRLF": base64.StdEncoding.EncodeToString(seed)[:20] + "\r\n" + base64.StdEncoding.EncodeToString(seed)[20:],
	}
	for name, key := range keys {
		t.Run(name, func(t *testing.T) {
			_, err := cdpSet(t).Render(map[string]string{"key_name": "k", "private_key": key},
				template.Request{Method: "GET", URL: "https://h/"}, template.Env{Now: fixedNow})
			if err == nil {
				t.Fatal("Render = nil error, want a refusal")
			}
			if msg := err.Error(); !strings.Contains(msg, "private_key") || strings.Contains(msg, key) || len(key) > 8 && strings.Contains(msg, key[:8]) {
				t.Errorf("Render error = %q, want the field named and no value", msg)
			}
		})
	}
}

// TestCDPJWTRequestAndRandomness: a request without a usable URL or method,
// and a failing randomness source, are render errors.
func TestCDPJWTRequestAndRandomness(t *testing.T) {
	seed, _ := rfc8032Key(t)
	values := map[string]string{"key_name": "k", "private_key": base64.StdEncoding.EncodeToString(seed)}
	failing := readerFunc(func([]byte) (int, error) { return 0, errors.New("no entropy") })
	cases := []struct {
		name string
		req  template.Request
		env  template.Env
	}{
		{"relative url", template.Request{Method: "GET", URL: "/platform/v2"}, template.Env{}},
		{"no method", template.Request{URL: "https://h/"}, template.Env{}},
		{"ftp url", template.Request{Method: "GET", URL: "ftp://h/"}, template.Env{}},
		{"randomness fails", template.Request{Method: "GET", URL: "https://h/"}, template.Env{Rand: failing}},
	}
	for _, tc := range cases {
		if _, err := cdpSet(t).Render(values, tc.req, tc.env); err == nil {
			t.Errorf("Render(%s) = nil error, want a refusal", tc.name)
		}
	}
	// The zero Env draws its nonce from crypto/rand: two tokens differ.
	a, _ := cdpSet(t).Render(values, template.Request{Method: "GET", URL: "https://h/"}, template.Env{Now: fixedNow})
	b, _ := cdpSet(t).Render(values, template.Request{Method: "GET", URL: "https://h/"}, template.Env{Now: fixedNow})
	if len(a.Headers) == 0 || headerMap(a.Headers)["Authorization"] == headerMap(b.Headers)["Authorization"] {
		t.Error("two passes made the same token: the nonce is not random")
	}
}

// TestCDPJWTAlone: a set whose only template is the cdp_jwt still reads
// the pass's clock for the token's times.
func TestCDPJWTAlone(t *testing.T) {
	seed, pub := rfc8032Key(t)
	set := mustCompile(t, []string{"key_name", "private_key"}, template.Templates{Header: map[string]string{
		"X-Jwt": "{{cdp_jwt(key_name, private_key)}}",
	}})
	env, _ := countingEnv()
	out, err := set.Render(map[string]string{"key_name": cdpKeyName, "private_key": base64.StdEncoding.EncodeToString(seed)},
		template.Request{Method: "GET", URL: "https://api.cdp.coinbase.com/platform/v2/evm/accounts"}, env)
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	verifyCDPJWT(t, headerMap(out.Headers)["X-Jwt"], pub, fixedNow().Unix())
}
