package requirement

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// fake returns n deterministic random characters from alphabet. Test
// tokens are built at run time so the source holds no token-shaped string.
func fake(seed uint64, n int, alphabet string) string {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	b62   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b64u  = b62 + "-_"
	b64s  = b62 + "+/"
	upDig = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexLo = "0123456789abcdef"
)

// credentialSamples are strings DetectCredential must refuse, by shape.
func credentialSamples() []struct{ name, s string } {
	return []struct{ name, s string }{
		{"openai", "sk-" + fake(1, 48, b62)},
		{"openai project", "sk-proj-" + fake(2, 40, b64u)},
		{"anthropic", "sk-ant-api03-" + fake(3, 40, b64u)},
		{"stripe live", "sk_live_" + fake(4, 24, b62)},
		{"stripe test", "sk_test_" + fake(5, 24, b62)},
		{"stripe restricted", "rk_live_" + fake(6, 24, b62)},
		{"stripe publishable", "pk_live_" + fake(7, 24, b62)},
		{"stripe webhook", "whsec_" + fake(8, 32, b62)},
		{"github classic", "ghp_" + fake(9, 36, b62)},
		{"github oauth", "gho_" + fake(10, 36, b62)},
		{"github server", "ghs_" + fake(11, 36, b62)},
		{"github user", "ghu_" + fake(12, 36, b62)},
		{"github refresh", "ghr_" + fake(13, 36, b62)},
		{"github fine-grained", "github_pat_" + fake(14, 22, b62) + "_" + fake(15, 59, b62)},
		{"gitlab", "glpat-" + fake(16, 20, b64u)},
		{"slack bot", "xoxb-" + fake(17, 12, "0123456789") + "-" + fake(18, 13, "0123456789") + "-" + fake(19, 24, b62)},
		{"slack user", "xoxp-" + fake(20, 12, "0123456789") + "-" + fake(21, 24, b62)},
		{"slack app", "xapp-1-" + fake(22, 30, b62)},
		{"aws access key", "AKIA" + fake(23, 16, upDig)},
		{"aws session key", "ASIA" + fake(24, 16, upDig)},
		{"aws documented example", "AKIAIOSFODNN7EXAMPLE"},
		{"google api key", "AIza" + fake(25, 35, b64u)},
		{"google client secret", "GOCSPX-" + fake(26, 28, b64u)},
		{"google access token", "ya29." + fake(27, 60, b64u)},
		{"sendgrid", "SG." + fake(28, 22, b64u) + "." + fake(29, 43, b64u)},
		{"npm", "npm_" + fake(30, 36, b62)},
		{"hugging face", "hf_" + fake(31, 34, b62)},
		{"shopify", "shpat_" + fake(32, 32, hexLo)},
		{"square", "sq0csp-" + fake(33, 43, b64u)},
		{"digitalocean", "dop_v1_" + fake(34, 64, hexLo)},
		{"pypi", "pypi-AgEIcHlwaS5vcmc" + fake(35, 50, b64u)},
		{"grafana", "glsa_" + fake(36, 32, b62)},
		{"jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + fake(37, 43, b64u)},
		{"jwt in text", "token is eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0 here"},
		{"pem private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE..."},
		{"pem openssh", "-----BEGIN OPENSSH PRIVATE KEY-----"},
		{"bearer", "Bearer " + fake(38, 40, b64u)},
		{"bearer in a header line", "Authorization: bearer " + fake(39, 24, b62)},
		{"basic", "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+fake(40, 12, b62)))},
		{"url userinfo", "https://admin:" + fake(41, 12, b62) + "@api.example.com/v1"},
		{"url token as user", "https://" + fake(42, 20, b62) + "@github.com/x.git"},
		{"slack webhook", "https://hooks.slack.com/services/T00000000/B00000000/" + fake(43, 24, b62)},
		{"discord webhook", "https://discord.com/api/webhooks/123/" + fake(44, 40, b64u)},
		{"telegram", "https://api.telegram.org/bot" + fake(45, 10, "0123456789") + ":" + fake(46, 35, b64u) + "/getMe"},
		{"telegram bare", fake(45, 10, "0123456789") + ":" + fake(46, 35, b64u)},
		{"query key", "https://api.example.com/v1?api_key=" + fake(47, 20, b62)},
		{"prose token", "set token=" + fake(48, 12, b62) + " in the header"},
		{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + fake(49, 40, b64s) + "=="},
		{"long hex", fake(50, 64, hexLo)},
		{"long hex upper", strings.ToUpper(fake(51, 40, hexLo))},
		{"random base62", fake(52, 32, b62)},
		{"random base64", fake(53, 44, b64s)},
		{"random in a sentence", "Your key looks like " + fake(54, 40, b62) + "."},
		{"stripe in a sentence", "Paste sk_live_" + fake(55, 24, b62) + " here"},
		{"coingecko demo key", "CG-" + fake(56, 24, b62)},
		{"random base62, 20 characters", fake(67, 20, b62)},
		{"random base62, 24 characters", fake(58, 24, b62)},
		{"random base62, 31 characters", fake(59, 31, b62)},
		{"random base64url, 22 characters in a sentence", "The key is " + fake(64, 22, b64u) + "."},
	}
}

// TestDetectCredentialTruePositives: every documented shape is refused,
// and the reason never repeats the value.
//
// conformance: P3-C13-16
func TestDetectCredentialTruePositives(t *testing.T) {
	for _, tc := range credentialSamples() {
		t.Run(tc.name, func(t *testing.T) {
			reason, ok := DetectCredential(tc.s)
			if !ok {
				t.Fatalf("DetectCredential(%q) = false, want true", tc.s)
			}
			if reason == "" || leaks(reason, tc.s) {
				t.Errorf("DetectCredential reason %q is empty or repeats the value", reason)
			}
		})
	}
}

// leaks reports whether msg contains any 12-character piece of secret.
func leaks(msg, secret string) bool {
	for i := 0; i+12 <= len(secret); i++ {
		if strings.Contains(msg, secret[i:i+12]) {
			return true
		}
	}
	return false
}

// TestDetectCredentialTrueNegatives: ordinary requirement text passes.
func TestDetectCredentialTrueNegatives(t *testing.T) {
	for _, s := range []string{
		"", "your API key", "Your OpenWeather API key.", "sk_live_…", "sk-...", "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
		"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "YOUR_TOKEN_HERE", "sk_live_YOUR_SECRET_KEY_HERE",
		"AKIAXXXXXXXXXXXXXXXX", "Bearer {{api_key}}", "Bearer token", "Bearer YOUR_ACCESS_TOKEN_GOES_HERE",
		"Basic {{base64(username)}}", "Basic authentication with your email", "basically anything",
		"https://api.example.com/v1/me?limit=10", "https://openweathermap.org/api#current",
		"user-read-private", "https://www.googleapis.com/auth/drive.readonly", "repo:status",
		"Copy the key and the secret: the secret is shown only once.", "Write to support@example.com.",
		"/2010-04-01/Accounts/AC0123/Messages", "GetAccountBalanceV2ForCustomerId123",
		"MyApplicationName2024ProductionEnvironmentKey", "2023-10-16", "application/vnd.github+json",
		"task-runner-abcdefghijklmnopqrstu", "desk-sk-abcdefghijklmnopqrstuvwxyz", "?key=YOUR_KEY", "token=xxxxxxxx",
		"/api/v3/simple/price?ids=bitcoin&vs_currencies=usd", "/v1/projects/PROJECT_ID/locations/us-central1/models",
		"{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}",
		"Settings > API > Create key", "eyJ", "-----", "sk-learning-app",
		"Open https://console.cloud.google.com/apis/credentials and choose Create credentials.",
		"CG-xxxxxxxxxxxxxxxxxxxxxxxx", "CG-YOUR_DEMO_API_KEY", "GetAccountBalanceV2", "OAuth2ClientCredentials",
		"com/api/v3/simple/price", "x-ratelimit-remaining", "Files.ReadWrite.All", "/v1/chat/completions",
		"ISO8601DateTimeFormat", "Windows10Pro64BitEdition", "/api/v1/Users/Me/Playlists2",
	} {
		if reason, ok := DetectCredential(s); ok {
			t.Errorf("DetectCredential(%q) = %q, true, want false", s, reason)
		}
	}
}

// TestDetectCredentialUnicodeOffsets: text whose Unicode lower case is
// longer than itself must not shift offsets (it once indexed out of range).
func TestDetectCredentialUnicodeOffsets(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("Ⱥ", 30) + " bearer x",
		strings.Repeat("Ⱥ", 30) + " Bearer " + fake(80, 24, b62),
		strings.Repeat("ẞK", 30) + " basic x",
	} {
		DetectCredential(s) // must not panic
	}
	if _, ok := DetectCredential(strings.Repeat("Ⱥ", 30) + " Bearer " + fake(81, 24, b62)); !ok {
		t.Errorf("DetectCredential(unicode prefix + bearer token) = false, want true")
	}
}

// TestDetectCredentialDocumentedFalsePositives pins the false positives
// the doc comment promises, so a change to them is deliberate.
func TestDetectCredentialDocumentedFalsePositives(t *testing.T) {
	for _, s := range []string{
		"0123456789abcdef0123456789abcdef",
		"ghp_ExampleTokenHere",
		"sk_test_123456789",
		"eyJhbGci.eyJzdWIi",
		"-----BEGIN CERTIFICATE-----",
		"Bearer abc123def456ghi789",
		"https://docs.example.com/?token=abc12345",
		"123e4567-e89b-12d3-a456-426614174000",
		"https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/token",
		"dGhlIHNhbXBsZSBub25jZQ==",
		"iPhone15ProMaxUS2024",
	} {
		if _, ok := DetectCredential(s); !ok {
			t.Errorf("DetectCredential(%q) = false, want the documented false positive", s)
		}
	}
}

// TestParseRefusesCredentialsInEverySeat puts a credential into each
// free-text seat; the requirement is refused at that seat and no violation
// repeats the value.
//
// conformance: P3-C13-16, P3-C12.5-01
func TestParseRefusesCredentialsInEverySeat(t *testing.T) {
	tok := "ghp_" + fake(60, 36, b62)
	stripe := "sk_live_" + fake(61, 24, b62)
	tests := []struct {
		name string
		base func() doc
		mut  func(doc)
		path string
		rule string
	}{
		{"provider name", baseDoc, set("provider.name", "Acme "+tok), "provider.name", RuleCredentialDetected},
		{"homepage url path", baseDoc, set("provider.homepageUrl", "https://example.com/"+tok), "provider.homepageUrl", RuleCredentialDetected},
		{"docs url query", baseDoc, set("provider.docsUrl", "https://example.com/docs?key="+stripe), "provider.docsUrl", RuleURLCredentialParam},
		{"field label", baseDoc, field(0, "label", "Key "+tok), "fields[0].label", RuleCredentialDetected},
		{"field description", baseDoc, field(0, "description", "For example "+stripe), "fields[0].description", RuleCredentialDetected},
		{"field placeholder", baseDoc, field(0, "placeholder", stripe), "fields[0].placeholder", RuleCredentialDetected},
		{"realistic key as a placeholder", baseDoc, field(0, "placeholder", "CG-"+fake(65, 24, b62)), "fields[0].placeholder", RuleCredentialDetected},
		{"short random key as a placeholder", baseDoc, field(0, "placeholder", fake(66, 24, b62)), "fields[0].placeholder", RuleCredentialDetected},
		{"console url", baseDoc, set("registration.consoleUrl", "https://example.com/"+tok), "registration.consoleUrl", RuleCredentialDetected},
		{"instruction", baseDoc, set("registration.instructions", []any{"Use " + tok + " as the key."}), "registration.instructions[0]", RuleCredentialDetected},
		{"token endpoint", oauthDoc, set("endpoints.token", "https://accounts.spotify.com/api/token/"+tok), "endpoints.token", RuleCredentialDetected},
		{"authorize endpoint query", oauthDoc, set("endpoints.authorize", "https://accounts.spotify.com/authorize?client_secret="+stripe), "endpoints.authorize", RuleURLCredentialParam},
		{"scope", oauthDoc, set("scopes", []any{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.x"}), "scopes[0]", RuleCredentialDetected},
		{"authorize param value", oauthDoc, set("authorizeParams", doc{"audience": stripe}), "authorizeParams.audience", RuleCredentialDetected},
		{"authorize param name", oauthDoc, set("authorizeParams", doc{stripe: "x"}), "authorizeParams.#0", RuleCredentialDetected},
		{"header static text", baseDoc, set("request", doc{"headerTemplate": doc{"Authorization": "Bearer " + fake(62, 40, b64u)}}), "request.headerTemplate.Authorization", RuleCredentialDetected},
		{"header static text beside a placeholder", baseDoc, set("request", doc{"headerTemplate": doc{"X-Key": "{{api_key}}" + stripe}}), "request.headerTemplate.X-Key", RuleCredentialDetected},
		{"query literal", baseDoc, set("request", doc{"queryTemplate": doc{"appid": "{{base64('" + stripe + "')}}"}}), "request.queryTemplate.appid", RuleCredentialDetected},
		{"query literal with escapes", baseDoc, set("request", doc{"queryTemplate": doc{"sig": `{{hmac_sha256('` + tok + `\'x', request.body)}}`}}), "request.queryTemplate.sig", RuleCredentialDetected},
		{"template name", baseDoc, set("request", doc{"queryTemplate": doc{"appid": "{{api_key}}", stripe: "x"}}), "request.queryTemplate.#1", RuleCredentialDetected},
		{"lan label", lanDoc, set("lanHost.label", "Bridge "+tok), "lanHost.label", RuleCredentialDetected},
		{"test request path", baseDoc, set("testRequest.pathAndQuery", "/v1/"+tok), "testRequest.pathAndQuery", RuleCredentialDetected},
		{"test request query", baseDoc, set("testRequest.pathAndQuery", "/v1/me?appid="+fake(63, 32, hexLo)), "testRequest.pathAndQuery", RuleURLCredentialParam},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs := checkRefused(t, tc.base, tc.mut, Options{}, tc.path, tc.rule)
			for _, v := range vs {
				for _, secret := range []string{tok, stripe} {
					if leaks(v.Path+v.Message, secret) {
						t.Errorf("violation %v repeats the credential", v)
					}
				}
			}
		})
	}
}

func TestTemplateTexts(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"{{api_key}}", []string{" "}},
		{"Bearer {{token}}", []string{"Bearer  "}},
		{"a{{x}}b{{y}}c", []string{"a b c"}},
		{"{{base64('lit')}}", []string{" ", "lit"}},
		{`{{f('a\'b', 'c\\d')}}`, []string{" ", "a'b", `c\d`}},
		{"{{f('}}')}}tail", []string{" tail", "}}"}},
		{"pre{{unclosed", []string{"pre unclosed"}},
		{"no template", []string{"no template"}},
	}
	for _, tc := range tests {
		got := templateTexts(tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("templateTexts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestParseRefusesCredentialsInIdentifiers: the identifier seats whose
// charset still fits a lowercase hex token are scanned too.
//
// conformance: P3-C13-16
func TestParseRefusesCredentialsInIdentifiers(t *testing.T) {
	hex := fake(90, 32, hexLo)
	checkRefused(t, baseDoc, set("slot", hex), Options{}, "slot", RuleCredentialDetected)
	checkRefused(t, baseDoc, withFieldKey(hex), Options{}, "fields[0].key", RuleCredentialDetected)
	checkRefused(t, baseDoc, set("declaredApiHosts", []any{hex + ".example.com"}), Options{}, "declaredApiHosts[0]", RuleCredentialDetected)
	checkAccepted(t, baseDoc, withFieldKey("hmac_secret_key_v2"), Options{})
}
