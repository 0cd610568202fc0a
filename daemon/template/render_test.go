package template_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/template"
)

// fixedNow is the clock most render tests use.
func fixedNow() time.Time { return time.Unix(1700000000, 0) }

// countingEnv returns an Env whose clock and randomness count their reads.
func countingEnv() (template.Env, *int) {
	n := new(int)
	return template.Env{
		Now: func() time.Time { *n++; return fixedNow() },
		Rand: readerFunc(func(p []byte) (int, error) {
			*n++
			for i := range p {
				p[i] = byte(i)
			}
			return len(p), nil
		}),
	}, n
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// stepClock advances one second on every read: two reads in one pass would
// disagree.
type stepClock struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	t := c.t
	c.t = c.t.Add(time.Second)
	return t
}

func mustCompile(t testing.TB, fields []string, tpl template.Templates) *template.Set {
	t.Helper()
	set, fs := template.Compile(fields, tpl)
	if fs != nil {
		t.Fatalf("Compile(%v) = %v, want no findings", tpl, fs)
	}
	return set
}

func headerMap(ps []template.Pair) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.Name] = p.Value
	}
	return m
}

// coinbaseExchange is the four-header Coinbase Exchange signature
// example.
func coinbaseExchange() template.Templates {
	return template.Templates{Header: map[string]string{
		"CB-ACCESS-KEY":        "{{api_key}}",
		"CB-ACCESS-SIGN":       "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}",
		"CB-ACCESS-TIMESTAMP":  "{{request.timestamp}}",
		"CB-ACCESS-PASSPHRASE": "{{passphrase}}",
	}}
}

var coinbaseFields = []string{"api_key", "api_secret", "passphrase"}

// coinbaseSecret is a 64-byte HMAC key, as Coinbase Exchange issues them.
var coinbaseSecret = []byte("\x8b\x1f\x00\xfe a sixty-four byte Coinbase Exchange secret, for tests\x00\x01\x02\x03\x04\x05")

// exchangeSign is Coinbase Exchange's signature, computed independently of
// the template engine.
func exchangeSign(secret []byte, ts, method, pathAndQuery, body string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + method + pathAndQuery + body))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestHMACSHA256RFC4231 runs the RFC 4231 HMAC-SHA256 test vectors through
// hmac_sha256, with binary keys and messages fed as field values.
// conformance: P3-C12.8-08
func TestHMACSHA256RFC4231(t *testing.T) {
	cases := []struct {
		name      string
		key, data string
		want      string // test case 5 gives only the first 128 bits
	}{
		{"case 1", strings.Repeat("\x0b", 20), "Hi There",
			"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"case 2", "Jefe", "what do ya want for nothing?",
			"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{"case 3", strings.Repeat("\xaa", 20), strings.Repeat("\xdd", 50),
			"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
		{"case 4", "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19", strings.Repeat("\xcd", 50),
			"82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
		{"case 5", strings.Repeat("\x0c", 20), "Test With Truncation",
			"a3b6167473100ee06e0c796c2955552b"},
		{"case 6", strings.Repeat("\xaa", 131), "Test Using Larger Than Block-Size Key - Hash Key First",
			"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
		{"case 7", strings.Repeat("\xaa", 131), "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
			"9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
	}
	set := mustCompile(t, []string{"key", "data"}, template.Templates{
		Header: map[string]string{"X-Mac": "{{hmac_sha256(key, data)}}"},
		Query:  map[string]string{"mac": "{{hmac_sha256(key, data)}}"},
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := set.Render(map[string]string{"key": tc.key, "data": tc.data}, template.Request{}, template.Env{})
			if err != nil {
				t.Fatalf("Render = %v", err)
			}
			for _, got := range []string{out.Headers[0].Value, out.Query[0].Value} {
				if len(got) != 64 || strings.ToLower(got) != got || !strings.HasPrefix(got, tc.want) {
					t.Errorf("hmac_sha256(%s) = %q, want %q (lowercase hex, 64 digits)", tc.name, got, tc.want)
				}
			}
		})
	}
}

// TestCoinbaseExchangeSignature recomputes the CB-ACCESS-SIGN that the host
// sent from the CB-ACCESS-TIMESTAMP it sent, with crypto/hmac.
// conformance: P3-C12.8-09, P3-C12.8.1-04, P3-C12.8.1-05
func TestCoinbaseExchangeSignature(t *testing.T) {
	set := mustCompile(t, coinbaseFields, coinbaseExchange())
	padded := base64.StdEncoding.EncodeToString(coinbaseSecret)
	reqs := []template.Request{
		{Method: "POST", URL: "https://api.exchange.coinbase.com/orders", PathAndQuery: "/orders",
			Body: `{"size":"0.01","price":"0.100","side":"buy","product_id":"BTC-USD"}`},
		{Method: "GET", URL: "https://api.exchange.coinbase.com/orders?limit=10&status=open", PathAndQuery: "/orders?limit=10&status=open"},
		{Method: "DELETE", URL: "https://api.exchange.coinbase.com/orders/a%2Fb", PathAndQuery: "/orders/a%2Fb"},
	}
	for _, secret := range []string{padded, strings.TrimRight(padded, "=")} {
		for _, req := range reqs {
			t.Run(fmt.Sprintf("%s %s padded=%v", req.Method, req.PathAndQuery, strings.HasSuffix(secret, "=")), func(t *testing.T) {
				out, err := set.Render(map[string]string{"api_key": "key-id", "api_secret": secret, "passphrase": "pass phrase"}, req, template.Env{Now: fixedNow})
				if err != nil {
					t.Fatalf("Render = %v", err)
				}
				h := headerMap(out.Headers)
				if got, want := h["CB-ACCESS-TIMESTAMP"], "1700000000"; got != want {
					t.Errorf("CB-ACCESS-TIMESTAMP = %q, want %q", got, want)
				}
				want := exchangeSign(coinbaseSecret, h["CB-ACCESS-TIMESTAMP"], req.Method, req.PathAndQuery, req.Body)
				if got := h["CB-ACCESS-SIGN"]; got != want {
					t.Errorf("CB-ACCESS-SIGN = %q, want %q", got, want)
				}
				if h["CB-ACCESS-KEY"] != "key-id" || h["CB-ACCESS-PASSPHRASE"] != "pass phrase" {
					t.Errorf("headers = %v", h)
				}
				names := make([]string, len(out.Headers))
				for i, p := range out.Headers {
					names[i] = p.Name
				}
				if !slices.IsSorted(names) {
					t.Errorf("headers are not sorted by name: %q", names)
				}
			})
		}
	}
}

// TestHMACSHA256B64 covers the fused helper's arity range and its parts.
// conformance: P3-C12.8-09
func TestHMACSHA256B64(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte("key"))
	for n := 1; n <= 5; n++ {
		parts := []string{"p1", "p2", "p3", "p4", "p5"}[:n]
		args := "'" + strings.Join(parts, "', '") + "'"
		set := mustCompile(t, []string{"s"}, template.Templates{Header: map[string]string{"X": "{{hmac_sha256_b64(s, " + args + ")}}"}})
		out, err := set.Render(map[string]string{"s": secret}, template.Request{}, template.Env{})
		if err != nil {
			t.Fatalf("Render = %v", err)
		}
		mac := hmac.New(sha256.New, []byte("key"))
		mac.Write([]byte(strings.Join(parts, "")))
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); out.Headers[0].Value != want {
			t.Errorf("hmac_sha256_b64(s, %s) = %q, want %q", args, out.Headers[0].Value, want)
		}
	}
}

// TestHMACSHA256B64BadSecret refuses a secret that is not standard base64,
// naming the field and never the value.
// conformance: P3-C12.8-09
func TestHMACSHA256B64BadSecret(t *testing.T) {
	set := mustCompile(t, []string{"api_secret"}, template.Templates{Header: map[string]string{"X-Sign": "{{hmac_sha256_b64(api_secret, request.body)}}"}})
	for _, secret := range []string{"not base64!", "YWJj\nZGVm", "YWJjZA=", "YW=Jj", "YWJjZA-_", "YR==", "Y"} {
		_, err := set.Render(map[string]string{"api_secret": secret}, template.Request{Body: "b"}, template.Env{})
		if err == nil {
			t.Errorf("Render(secret %q) = nil error, want a refusal", secret)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "api_secret") || strings.Contains(msg, secret) {
			t.Errorf("Render(secret %q) error = %q, want it to name api_secret and not the value", secret, msg)
		}
	}
}

// TestOneTimestamp renders across forced second boundaries: a clock that
// advances a second on every read. Every timestamp use in both placements
// and inside the signature is the one value the pass read, and the pass
// reads the clock once.
// conformance: P3-C12.8-06, P3-C12.8.1-01, P3-C12.8.1-02, P3-C12.8.1-05
func TestOneTimestamp(t *testing.T) {
	tpl := coinbaseExchange()
	tpl.Header["X-Ts"] = "{{timestamp()}}"
	tpl.Header["X-Both"] = "{{timestamp()}}/{{request.timestamp}}/{{timestamp()}}"
	tpl.Query = map[string]string{"ts": "{{request.timestamp}}", "t2": "{{timestamp()}}", "sig": "{{hmac_sha256(api_secret, request.timestamp)}}"}
	set := mustCompile(t, coinbaseFields, tpl)
	clock := &stepClock{t: time.Unix(1700000000, 999_999_999)}
	secret := base64.StdEncoding.EncodeToString(coinbaseSecret)
	req := template.Request{Method: "POST", URL: "https://api.exchange.coinbase.com/orders", PathAndQuery: "/orders", Body: "{}"}
	var last string
	for pass := range 3 {
		out, err := set.Render(map[string]string{"api_key": "k", "api_secret": secret, "passphrase": "p"}, req, template.Env{Now: clock.Now})
		if err != nil {
			t.Fatalf("Render = %v", err)
		}
		if clock.reads != pass+1 {
			t.Fatalf("after %d passes the clock was read %d times, want once per pass", pass+1, clock.reads)
		}
		h, q := headerMap(out.Headers), headerMap(out.Query)
		ts := h["CB-ACCESS-TIMESTAMP"]
		if want := fmt.Sprint(1700000000 + pass); ts != want {
			t.Errorf("pass %d timestamp = %q, want %q (unix seconds)", pass, ts, want)
		}
		for name, got := range map[string]string{"X-Ts": h["X-Ts"], "X-Both": h["X-Both"], "ts": q["ts"], "t2": q["t2"]} {
			if want := strings.TrimSuffix(strings.Repeat(ts+"/", strings.Count(got, "/")+1), "/"); got != want {
				t.Errorf("pass %d %s = %q, want %q", pass, name, got, want)
			}
		}
		if got, want := h["CB-ACCESS-SIGN"], exchangeSign(coinbaseSecret, ts, req.Method, req.PathAndQuery, req.Body); got != want {
			t.Errorf("pass %d CB-ACCESS-SIGN = %q, want %q recomputed from the sent timestamp", pass, got, want)
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts))
		if got, want := q["sig"], hex.EncodeToString(mac.Sum(nil)); got != want {
			t.Errorf("pass %d query sig = %q, want %q", pass, got, want)
		}
		if ts == last {
			t.Errorf("pass %d reused the previous pass's timestamp", pass)
		}
		last = ts
	}
}

// TestTimestampIsMinted shows that the timestamp comes from the pass's
// clock in unix seconds, whatever the request carries.
// conformance: P3-C12.8-06, P3-C12.8.1-03
func TestTimestampIsMinted(t *testing.T) {
	set := mustCompile(t, nil, template.Templates{
		Header: map[string]string{"X-A": "{{timestamp()}}", "X-B": "{{request.timestamp}}"},
		Query:  map[string]string{"t": "{{request.timestamp}}"},
	})
	now := time.Date(2024, 2, 29, 23, 59, 59, 999_999_999, time.FixedZone("x", -7*3600))
	req := template.Request{
		Method:       "POST",
		URL:          "https://api.example.test/?timestamp=1&request.timestamp=2",
		PathAndQuery: "/?timestamp=1&request.timestamp=2",
		Body:         `{"timestamp":"3","CB-ACCESS-TIMESTAMP":"4"}`,
	}
	out, err := set.Render(nil, req, template.Env{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	want := fmt.Sprint(now.Unix())
	for _, p := range append(out.Headers, out.Query...) {
		if p.Value != want {
			t.Errorf("%s = %q, want %q", p.Name, p.Value, want)
		}
	}
	// The zero Env reads the system clock.
	before := time.Now().Unix()
	out, err = set.Render(nil, req, template.Env{})
	after := time.Now().Unix()
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	if got := out.Headers[0].Value; got < fmt.Sprint(before) || got > fmt.Sprint(after) {
		t.Errorf("timestamp() with the zero Env = %q, want between %d and %d", got, before, after)
	}
}

// TestQuotedLiteralIsNeverResolved is the disclosure rule: a
// quoted argument renders verbatim even when it spells a declared field
// holding a live credential, or a request token.
// conformance: P3-C12.8-16
func TestQuotedLiteralIsNeverResolved(t *testing.T) {
	const live = "sk-live-0123456789abcdef"
	mac := func(k, m string) string {
		h := hmac.New(sha256.New, []byte(k))
		h.Write([]byte(m))
		return hex.EncodeToString(h.Sum(nil))
	}
	cases := []struct {
		value string
		want  string
	}{
		{"{{base64('api_key')}}", "YXBpX2tleQ=="},
		{"{{'api_key'}}", "api_key"},
		{"{{base64('request.url')}}", base64.StdEncoding.EncodeToString([]byte("request.url"))},
		{"{{hmac_sha256('api_key', 'request.body')}}", mac("api_key", "request.body")},
		{"{{hmac_sha256(api_key, 'api_key')}}", mac(live, "api_key")},
		{"x{{'{{api_key}}'}}x", "x{{api_key}}x"},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			set := mustCompile(t, []string{"api_key"}, template.Templates{Header: map[string]string{"X": tc.value}, Query: map[string]string{"q": tc.value}})
			out, err := set.Render(map[string]string{"api_key": live}, template.Request{URL: "https://h/", Body: "body"}, template.Env{})
			if err != nil {
				t.Fatalf("Render = %v", err)
			}
			if out.Headers[0].Value != tc.want || out.Query[0].Value != tc.want {
				t.Errorf("Render(%q) = %q, %q; want %q", tc.value, out.Headers[0].Value, out.Query[0].Value, tc.want)
			}
			if strings.Contains(out.Headers[0].Value, live) {
				t.Errorf("Render(%q) disclosed the credential", tc.value)
			}
		})
	}
	// A Set whose templates only quote the key does not reference the field:
	// it neither needs nor reads its value.
	set := mustCompile(t, []string{"api_key"}, template.Templates{Header: map[string]string{"X": "{{base64('api_key')}}"}})
	if f := set.Fields(); len(f) != 0 {
		t.Errorf("Fields() = %q, want none", f)
	}
	out, err := set.Render(nil, template.Request{}, template.Env{})
	if err != nil || out.Headers[0].Value != "YXBpX2tleQ==" || len(out.Secrets) != 0 {
		t.Errorf("Render = %v, %v; want YXBpX2tleQ== and no secrets", out, err)
	}
}

// TestBase64 is UTF-8 in, standard padded base64 out.
// conformance: P3-C12.8-07
func TestBase64(t *testing.T) {
	cases := []struct{ value, field, want string }{
		{"{{base64('é')}}", "", "w6k="},
		{"{{base64('')}}", "", ""},
		{"{{base64('a')}}", "", "YQ=="},
		{"{{base64('ab')}}", "", "YWI="},
		{"{{base64('abc')}}", "", "YWJj"},
		{"{{base64('日本')}}", "", "5pel5pys"},
		{"{{base64('\\'\\\\')}}", "", "J1w="},
		{"Basic {{base64(f)}}", "user:pässword", "Basic " + base64.StdEncoding.EncodeToString([]byte("user:pässword"))},
		{"{{base64(f)}}", "\xff\xfe>?", "//4+Pw=="},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			set := mustCompile(t, []string{"f"}, template.Templates{Header: map[string]string{"X": tc.value}})
			out, err := set.Render(map[string]string{"f": tc.field}, template.Request{}, template.Env{})
			if err != nil {
				t.Fatalf("Render = %v", err)
			}
			if got := out.Headers[0].Value; got != tc.want {
				t.Errorf("Render(%q) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

// TestLiteralPunctuation renders literals holding the grammar's own
// punctuation: commas, parentheses, braces and escaped quotes reach the
// helper as text.
func TestLiteralPunctuation(t *testing.T) {
	set := mustCompile(t, []string{"k"}, template.Templates{Header: map[string]string{
		"X-A": `{{hmac_sha256(k, 'a,b)}}{{(c')}}`,
		"X-B": `{{hmac_sha256_b64(k, 'it\'s', ',', '\\')}}`,
		"X-C": `{{'}}'}}{{'{{'}}{ }`,
	}})
	key := base64.StdEncoding.EncodeToString([]byte("k"))
	out, err := set.Render(map[string]string{"k": key}, template.Request{}, template.Env{})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	h := headerMap(out.Headers)
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("a,b)}}{{(c"))
	if want := hex.EncodeToString(m.Sum(nil)); h["X-A"] != want {
		t.Errorf("X-A = %q, want %q", h["X-A"], want)
	}
	m = hmac.New(sha256.New, []byte("k"))
	m.Write([]byte(`it's,\`))
	if want := base64.StdEncoding.EncodeToString(m.Sum(nil)); h["X-B"] != want {
		t.Errorf("X-B = %q, want %q", h["X-B"], want)
	}
	if want := "}}{{{ }"; h["X-C"] != want {
		t.Errorf("X-C = %q, want %q", h["X-C"], want)
	}
}

// TestHeaderValueRefused refuses a rendered header value that could split
// or smuggle a header, whichever field or token brought the byte in. The
// error never holds the value. The query placement takes the same bytes:
// PlaceQuery encodes them.
func TestHeaderValueRefused(t *testing.T) {
	bad := map[string]string{
		"CR":        "secret\rX-Evil: 1",
		"LF":        "secret\nX-Evil: 1",
		"CRLF":      "secret\r\nX-Evil: 1",
		"NUL":       "secret\x00",
		"non-ASCII": "sécret",
		"high byte": "secret\xff",
		"tab":       "sec\tret",
		"DEL":       "secret\x7f",
		"ESC":       "secret\x1b[31m",
	}
	for name, v := range bad {
		t.Run(name, func(t *testing.T) {
			set := mustCompile(t, []string{"api_key"}, template.Templates{Header: map[string]string{"Authorization": "Bearer {{api_key}}"}})
			out, err := set.Render(map[string]string{"api_key": v}, template.Request{}, template.Env{})
			if err == nil {
				t.Fatalf("Render(%q) = %v, want a refusal", v, out)
			}
			if msg := err.Error(); strings.Contains(msg, v) || strings.Contains(msg, "secret") || !strings.Contains(msg, "request.headerTemplate.Authorization") {
				t.Errorf("Render(%q) error = %q, want the seat named and no value", v, msg)
			}
			tok := mustCompile(t, nil, template.Templates{Header: map[string]string{"X-Url": "{{request.url}}", "X-Body": "{{request.body}}"}})
			if _, err := tok.Render(nil, template.Request{URL: "https://h/", Body: v}, template.Env{}); err == nil {
				t.Errorf("Render(body %q) into a header = nil error, want a refusal", v)
			}
			q := mustCompile(t, []string{"api_key"}, template.Templates{Query: map[string]string{"key": "{{api_key}}"}})
			if out, err := q.Render(map[string]string{"api_key": v}, template.Request{}, template.Env{}); err != nil || out.Query[0].Value != v {
				t.Errorf("Render(%q) into the query = %v, %v; want the value unencoded", v, out, err)
			}
		})
	}
}

// TestMissingValue refuses to render a referenced field with no value,
// naming the key.
func TestMissingValue(t *testing.T) {
	set := mustCompile(t, coinbaseFields, coinbaseExchange())
	for _, values := range []map[string]string{
		nil,
		{"api_key": "k", "api_secret": "c2VjcmV0"},
		{"api_key": "k", "api_secret": "c2VjcmV0", "passphrase": ""},
	} {
		_, err := set.Render(values, template.Request{}, template.Env{})
		if !errors.Is(err, template.ErrMissingValue) {
			t.Errorf("Render(%v) = %v, want ErrMissingValue", values, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "field ") || strings.Contains(msg, "c2VjcmV0") {
			t.Errorf("Render(%v) error = %q, want the key named and no value", values, msg)
		}
	}
	_, err := set.Render(map[string]string{"api_key": "k", "api_secret": "c2VjcmV0"}, template.Request{}, template.Env{})
	if err == nil || !strings.Contains(err.Error(), "passphrase") {
		t.Errorf("Render without passphrase = %v, want the key passphrase named", err)
	}
}

// TestSecrets lists every referenced field value and every rendered value
// that used one, with the encoded form a query value takes on the URL.
func TestSecrets(t *testing.T) {
	set := mustCompile(t, []string{"api_key", "unused"}, template.Templates{
		Header: map[string]string{
			"Authorization": "Bearer {{api_key}}",
			"X-Static":      "{{'static'}}",
			"X-Ts":          "{{timestamp()}}",
			"X-Lit":         "{{base64('api_key')}}",
		},
		Query: map[string]string{"key": "{{api_key}}", "v": "1"},
	})
	out, err := set.Render(map[string]string{"api_key": "a b+c", "unused": "never read"}, template.Request{}, template.Env{Now: fixedNow})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	want := []string{"Bearer a b+c", "a%20b%2Bc", "a b+c"}
	if !slices.Equal(out.Secrets, want) {
		t.Errorf("Secrets = %q, want %q", out.Secrets, want)
	}
	placed, err := template.PlaceQuery("https://h/p", out.Query)
	if err != nil {
		t.Fatalf("PlaceQuery = %v", err)
	}
	if !strings.Contains(placed, out.Secrets[1]) {
		t.Errorf("PlaceQuery = %q, want it to hold the listed encoded secret %q", placed, out.Secrets[1])
	}
}

// TestRenderErrorsCarryNoValue renders every failure with distinctive
// values and checks that no error text holds one.
func TestRenderErrorsCarryNoValue(t *testing.T) {
	values := map[string]string{
		"api_key":     "VALUE-api-key\r\n",
		"api_secret":  "VALUE-secret!!",
		"key_name":    "VALUE-key-name",
		"private_key": "VALUE-private-key",
	}
	for _, v := range []string{
		"{{api_key}}",
		"{{hmac_sha256_b64(api_secret, request.body)}}",
		"{{cdp_jwt(key_name, private_key)}}",
		"{{cdp_jwt(key_name, api_secret)}}",
	} {
		set := mustCompile(t, testFields, template.Templates{Header: map[string]string{"X": v}})
		_, err := set.Render(values, template.Request{Method: "GET", URL: "https://h/"}, template.Env{})
		if err == nil {
			t.Errorf("Render(%q) = nil error, want a refusal", v)
			continue
		}
		if strings.Contains(err.Error(), "VALUE") {
			t.Errorf("Render(%q) error = %q holds a value", v, err)
		}
	}
}

// TestNilAndZeroSet: a nil Set refuses to render, and the zero Set renders
// nothing. There is no other way to get a Set than Compile.
func TestNilAndZeroSet(t *testing.T) {
	var nilSet *template.Set
	if _, err := nilSet.Render(nil, template.Request{}, template.Env{}); err == nil {
		t.Error("Render on a nil Set = nil error, want a refusal")
	}
	if nilSet.Fields() != nil || nilSet.HeaderNames() != nil || nilSet.QueryNames() != nil {
		t.Error("a nil Set reports names")
	}
	out, err := new(template.Set).Render(map[string]string{"api_key": "k"}, template.Request{}, template.Env{})
	if err != nil || out.Headers != nil || out.Query != nil || out.Secrets != nil {
		t.Errorf("Render on the zero Set = %v, %v; want nothing", out, err)
	}
}

// TestRenderConcurrent renders one Set from many goroutines; with -race it
// shows the Set is immutable and each pass's state its own.
func TestRenderConcurrent(t *testing.T) {
	set := mustCompile(t, coinbaseFields, coinbaseExchange())
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			secret := []byte(fmt.Sprintf("secret %d", i))
			req := template.Request{Method: "GET", PathAndQuery: fmt.Sprintf("/p/%d", i)}
			for j := range 50 {
				now := time.Unix(int64(1700000000+j), 0)
				out, err := set.Render(map[string]string{"api_key": fmt.Sprint(i), "api_secret": base64.StdEncoding.EncodeToString(secret), "passphrase": "p"},
					req, template.Env{Now: func() time.Time { return now }})
				if err != nil {
					t.Errorf("Render = %v", err)
					return
				}
				h := headerMap(out.Headers)
				if want := exchangeSign(secret, fmt.Sprint(now.Unix()), "GET", req.PathAndQuery, ""); h["CB-ACCESS-SIGN"] != want || h["CB-ACCESS-KEY"] != fmt.Sprint(i) {
					t.Errorf("goroutine %d pass %d: headers = %v", i, j, h)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSecretsHoldDerivedOutputs: a helper output that read a field is a
// scrub candidate alone, without the literal text around it, so an
// upstream echoing only the base64 of user:pass (or only an HMAC) is
// scrubbed; a helper over literals alone is not a candidate.
func TestSecretsHoldDerivedOutputs(t *testing.T) {
	set := mustCompile(t, []string{"cred", "key"}, template.Templates{Header: map[string]string{
		"Authorization": "Basic {{base64(cred)}}",
		"X-Sig":         "v1={{hmac_sha256(key, 'msg')}};lit={{base64('public')}}",
	}})
	out, err := set.Render(map[string]string{"cred": "user:pass", "key": "k3y"}, template.Request{}, template.Env{Now: fixedNow})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	mac := hmac.New(sha256.New, []byte("k3y"))
	mac.Write([]byte("msg"))
	for _, want := range []string{base64.StdEncoding.EncodeToString([]byte("user:pass")), hex.EncodeToString(mac.Sum(nil))} {
		if !slices.Contains(out.Secrets, want) {
			t.Errorf("Secrets lacks the derived output %q: %q", want, out.Secrets)
		}
	}
	if slices.Contains(out.Secrets, base64.StdEncoding.EncodeToString([]byte("public"))) {
		t.Errorf("Secrets holds the base64 of a literal: %q", out.Secrets)
	}
}

// TestTimestampAlone: a value that reads the pass's timestamp and nothing
// else still gets it, by helper and by request token.
func TestTimestampAlone(t *testing.T) {
	for _, v := range []string{"{{timestamp()}}", "{{request.timestamp}}"} {
		set := mustCompile(t, nil, template.Templates{Header: map[string]string{"X-Ts": v}})
		out, err := set.Render(nil, template.Request{}, template.Env{Now: fixedNow})
		if err != nil || headerMap(out.Headers)["X-Ts"] != "1700000000" {
			t.Errorf("Render(%s) = %v, %v; want X-Ts 1700000000", v, out.Headers, err)
		}
	}
}
