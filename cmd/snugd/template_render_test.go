package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCmd runs snugd with args in-process and returns its exit status,
// stdout and stderr.
func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := dispatch(t.Context(), e, args)
	return code, out.String(), errb.String()
}

// writeFile writes content to dir/name with mode and returns its path.
func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// The Coinbase Exchange secret of these tests: base64 of 32 bytes, as the
// exchange issues it.
const (
	cbKey        = "e2e-key-7d1f"
	cbPassphrase = "correct horse"
	cbSecretRaw  = "0123456789abcdef0123456789abcdef"
)

func cbSecret() string { return base64.StdEncoding.EncodeToString([]byte(cbSecretRaw)) }

func cbValues() string {
	return `{"api_key":"` + cbKey + `","api_secret":"` + cbSecret() + `","passphrase":"` + cbPassphrase + `"}`
}

// cbSign computes CB-ACCESS-SIGN the way Coinbase's documentation does,
// independently of daemon/template.
func cbSign(ts, method, pathAndQuery, body string) string {
	key, _ := base64.StdEncoding.DecodeString(cbSecret())
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ts + method + pathAndQuery + body))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestTemplateRenderCoinbase renders the Coinbase signing example with a fixed clock
// and checks the signature against an independent computation from the
// timestamp it printed.
// conformance: P3-C12.8.1-05, P3-C12.8.1-04, P3-C12.8-09
func TestTemplateRenderCoinbase(t *testing.T) {
	dir := t.TempDir()
	values := writeFile(t, dir, "values.json", cbValues(), 0o600)
	body := writeFile(t, dir, "body.json", `{"size":"0.01","price":"100","side":"buy","product_id":"BTC-USD"}`, 0o644)
	tests := []struct {
		name, method, url, pathAndQuery, body string
		args                                  []string
	}{
		{name: "GET", method: "GET", url: "https://api.exchange.coinbase.com/accounts?limit=5", pathAndQuery: "/accounts?limit=5"},
		{name: "POST with a body", method: "POST", url: "https://api.exchange.coinbase.com/orders", pathAndQuery: "/orders",
			body: `{"size":"0.01","price":"100","side":"buy","product_id":"BTC-USD"}`, args: []string{"--body-file", body}},
		{name: "fragment never sent", method: "DELETE", url: "https://api.exchange.coinbase.com/orders/42#x", pathAndQuery: "/orders/42"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json",
				"--values", values, "--method", tc.method, "--url", tc.url, "--timestamp", "1700000000"}, tc.args...)
			code, out, errOut := runCmd(t, "", args...)
			if code != exitOK {
				t.Fatalf("render = %d, stderr %q", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			wantURL := strings.TrimSuffix(tc.url, "#x")
			ts := "1700000000"
			want := []string{
				wantURL,
				"CB-ACCESS-KEY: " + cbKey,
				"CB-ACCESS-PASSPHRASE: " + cbPassphrase,
				"CB-ACCESS-SIGN: " + cbSign(ts, tc.method, tc.pathAndQuery, tc.body),
				"CB-ACCESS-TIMESTAMP: " + ts,
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("render output =\n%s\nwant\n%s", out, strings.Join(want, "\n"))
			}
		})
	}
}

// TestTemplateRenderNow renders without --timestamp: the printed signature
// still verifies against the printed timestamp (one clock read per pass).
// conformance: P3-C12.8.1-01, P3-C12.8.1-05
func TestTemplateRenderNow(t *testing.T) {
	values := writeFile(t, t.TempDir(), "v.json", cbValues(), 0o600)
	code, out, errOut := runCmd(t, "", "ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json",
		"--values", values, "--method", "GET", "--url", "https://api.exchange.coinbase.com/accounts")
	if code != exitOK {
		t.Fatalf("render = %d, stderr %q", code, errOut)
	}
	h := map[string]string{}
	for _, l := range strings.Split(out, "\n")[1:] {
		if name, v, ok := strings.Cut(l, ": "); ok {
			h[name] = v
		}
	}
	ts := h["CB-ACCESS-TIMESTAMP"]
	if ts == "" || h["CB-ACCESS-SIGN"] != cbSign(ts, "GET", "/accounts", "") {
		t.Errorf("signature does not verify against the sent timestamp %q:\n%s", ts, out)
	}
}

// TestTemplateRenderQuery places a query credential percent-encoded after
// the existing query, and values come from standard input.
func TestTemplateRenderQuery(t *testing.T) {
	code, out, errOut := runCmd(t, `{"api_key":"k y&=é"}`, "ctl", "template", "render", "--requirement", "testdata/openweather.json",
		"--values", "-", "--method", "GET", "--url", "https://api.openweathermap.org/data/2.5/weather?q=London")
	if code != exitOK {
		t.Fatalf("render = %d, stderr %q", code, errOut)
	}
	want := "https://api.openweathermap.org/data/2.5/weather?q=London&appid=k%20y%26%3D%C3%A9\n"
	if out != want {
		t.Errorf("render output = %q, want %q", out, want)
	}
}

// TestTemplateRenderRefusals covers every way render says no: the lint's
// findings (exit 1, "path: rule: message"), usage errors (exit 2), unsafe
// values files, and requests the executor would refuse before rendering.
// No refusal prints a credential.
// conformance: P3-C12.8-04, P3-C12.9-04
func TestTemplateRenderRefusals(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", cbValues(), 0o600)
	open := writeFile(t, dir, "open.json", cbValues(), 0o644)
	typo, _ := os.ReadFile("testdata/coinbase-exchange.json")
	typoReq := writeFile(t, dir, "typo.json", strings.Replace(string(typo), "hmac_sha256_b64(api_secret,", "hmac_sha256_b64(api_secrt,", 1), 0o644)
	unknown := writeFile(t, dir, "unknown.json", `{"api_key":"`+cbKey+`","api_secret":"`+cbSecret()+`","passphrase":"p","other":"`+cbPassphrase+`"}`, 0o600)
	missing := writeFile(t, dir, "missing.json", `{"api_key":"`+cbKey+`","api_secret":"`+cbSecret()+`"}`, 0o600)
	badJSON := writeFile(t, dir, "bad.json", `{"api_key":`+cbKey+`}`, 0o600)
	dup := writeFile(t, dir, "dup.json", `{"api_key":"a","api_key":"`+cbKey+`"}`, 0o600)
	notSecret := writeFile(t, dir, "notsecret.json", `{"api_key":"`+cbKey+`","api_secret":"%%%","passphrase":"`+cbPassphrase+`"}`, 0o600)
	base := func(extra ...string) []string {
		return append([]string{"ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json", "--method", "GET",
			"--url", "https://api.exchange.coinbase.com/accounts"}, extra...)
	}
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		wantErr string
	}{
		{name: "lint finding", args: []string{"ctl", "template", "render", "--requirement", typoReq, "--values", good, "--method", "GET", "--url", "https://api.exchange.coinbase.com/x"},
			code: exitNo, wantErr: "request.headerTemplate.CB-ACCESS-SIGN: template.unknown-identifier: unknown identifier api_secrt: did you mean api_secret?"},
		{name: "values on the command line", args: base("--values", good, cbKey), code: exitUsage, wantErr: "unexpected argument #1"},
		{name: "no values", args: base(), code: exitUsage, wantErr: "--values required"},
		{name: "values readable by others", args: base("--values", open), code: exitNo, wantErr: "must not be readable by group or others"},
		{name: "undeclared key", args: base("--values", unknown), code: exitNo, wantErr: `"other" is not a declared field`},
		{name: "missing value", args: base("--values", missing), code: exitNo, wantErr: "passphrase"},
		{name: "not JSON", args: base("--values", badJSON), code: exitNo, wantErr: "not a JSON object"},
		{name: "duplicate key", args: base("--values", dup), code: exitNo, wantErr: `"api_key" appears twice`},
		{name: "secret not base64", args: base("--values", notSecret), code: exitNo, wantErr: "api_secret"},
		{name: "off-ceiling host", args: []string{"ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json", "--values", good,
			"--method", "GET", "--url", "https://evil.example/accounts"}, code: exitNo, wantErr: "not one of the requirement's hosts"},
		{name: "http", args: []string{"ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json", "--values", good,
			"--method", "GET", "--url", "http://api.exchange.coinbase.com/accounts"}, code: exitNo, wantErr: "scheme must be https"},
		{name: "body on GET", args: base("--values", good, "--body-file", good), code: exitNo, wantErr: "would be refused"},
		{name: "bad method", args: []string{"ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json", "--values", good,
			"--method", "get", "--url", "https://api.exchange.coinbase.com/x"}, code: exitNo, wantErr: "would be refused"},
		{name: "both on stdin", args: base("--values", "-", "--body-file", "-"), code: exitUsage, wantErr: "cannot both"},
		{name: "bad timestamp", args: base("--values", good, "--timestamp", "-5"), code: exitUsage, wantErr: "--timestamp"},
		{name: "unknown subcommand", args: []string{"ctl", "template", "draw"}, code: exitUsage, wantErr: "unknown subcommand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("render(%q) = %d, want %d (stderr %q)", tc.args, code, tc.code, errOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("render(%q) stderr = %q, want it to contain %q", tc.args, errOut, tc.wantErr)
			}
			if out != "" {
				t.Errorf("render(%q) stdout = %q, want nothing", tc.args, out)
			}
			for _, secret := range []string{cbKey, cbSecret(), cbPassphrase, cbSecretRaw} {
				if strings.Contains(errOut, secret) {
					t.Errorf("render(%q) stderr carries a credential: %q", tc.args, errOut)
				}
			}
		})
	}
}

// TestParseValues checks the values decoder: strict shape, fixed messages
// that never quote a value.
func TestParseValues(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{in: `{"a":"x","b_2":"y"}`, want: map[string]string{"a": "x", "b_2": "y"}},
		{in: ` {} `, want: map[string]string{}},
		{in: `[]`, wantErr: "not a JSON object"},
		{in: `{"a":1}`, wantErr: `the value of "a" is not a string`},
		{in: `{"a":""}`, wantErr: "is empty"},
		{in: `{"a":"x"} {}`, wantErr: "data after"},
		{in: `{"sk-live-123456":"x","sk-live-123456":"y"}`, wantErr: "a key appears twice"},
		{in: "{\"a\":\"\xff\"}", wantErr: "not a JSON object"},
		{in: `{"a":"secret-value`, wantErr: "not a JSON object"},
	}
	for _, tc := range tests {
		got, err := parseValues([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseValues(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret-value") {
				t.Errorf("parseValues(%q) error quotes a value: %v", tc.in, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parseValues(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("parseValues(%q)[%q] = %q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}

// FuzzParseValues: the values decoder never panics, an error never quotes
// a string value of the input, and what it accepts round-trips.
func FuzzParseValues(f *testing.F) {
	for _, s := range []string{`{"a":"x"}`, `{}`, `{"a":1}`, `{"a":"x","a":"y"}`, `{"a":"\u0000"}`, `[`, `{"a":"x"}x`, `{"a":["secret"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		values, err := parseValues(data)
		if err != nil {
			var generic map[string]any
			if json.Unmarshal(data, &generic) == nil {
				for _, v := range generic {
					if s, ok := v.(string); ok && len(s) >= 3 && strings.Contains(err.Error(), s) {
						t.Fatalf("parseValues(%q) error %q quotes a value", data, err)
					}
				}
			}
			return
		}
		again, err := json.Marshal(values)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseValues(again)
		if err != nil || !maps.Equal(back, values) {
			t.Fatalf("parseValues(%q) = %v; re-encoded %q parses to %v, %v", data, values, again, back, err)
		}
		for k, v := range values {
			if v == "" {
				t.Fatalf("parseValues(%q) accepted an empty value for %q", data, k)
			}
		}
	})
}
