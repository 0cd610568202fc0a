package oauth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/oauth"
)

// connected signs the user in through the desktop flow and returns the
// OP, the client and the token the callback obtained.
func connected(t *testing.T) (*authServer, *miniDaemon, oauth.Token) {
	t.Helper()
	as, d := desktopSetup(t)
	_, authURL := desktopFlow(t, d, as)
	resp := as.userAgent(nil).signIn(t.Context(), t, authURL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in ended with %d", resp.StatusCode)
	}
	return as, d, d.lastToken(t)
}

// TestClientCredentials fetches a token with the example storage's
// service client, in both client authentication styles.
func TestClientCredentials(t *testing.T) {
	as := newAuthServer(t)
	c := &oauth.Client{HTTP: as.srv.Client()}
	for _, style := range []oauth.AuthStyle{oauth.AuthBasic, oauth.AuthPost} {
		ep := oauth.Endpoint{TokenURL: as.tokenURL, ClientID: serviceID, ClientSecret: serviceKey, AuthStyle: style}
		tok, err := c.ClientCredentials(t.Context(), ep, []string{"openid"})
		if err != nil {
			t.Fatalf("ClientCredentials(style %d) = %v", style, err)
		}
		if tok.AccessToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn <= 0 || tok.RefreshToken != "" {
			t.Fatalf("ClientCredentials(style %d) token: type %q expires %v refresh %t", style, tok.TokenType, tok.ExpiresIn, tok.RefreshToken != "")
		}
	}
	if n := as.count("client_credentials"); n != 2 {
		t.Fatalf("client_credentials POSTs = %d, want 2", n)
	}
	// A wrong secret is refused, Failed, not Transient.
	_, err := c.ClientCredentials(t.Context(), oauth.Endpoint{TokenURL: as.tokenURL, ClientID: serviceID, ClientSecret: "wrong"}, nil)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Class != oauth.Failed {
		t.Fatalf("ClientCredentials(wrong secret) = %v, want a Failed *Error", err)
	}
}

// store is the slot's credential slice as the daemon keeps it: one token,
// written whole (access and refresh token in one write).
type store struct {
	mu  sync.Mutex
	tok oauth.Token
}

func (s *store) load(context.Context) (oauth.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok, nil
}

func (s *store) put(t oauth.Token) {
	s.mu.Lock()
	s.tok = t
	s.mu.Unlock()
}

// TestRefreshSingleFlight: 32 concurrent requests for a token within the
// skew of expiry make exactly one refresh POST (the OP counts), and all
// get the rotated token; the old refresh token is then refused
// (rotation, reuse detection).
//
// conformance: P3-C13-23
func TestRefreshSingleFlight(t *testing.T) {
	as, d, tok := connected(t)
	old := tok.RefreshToken
	// The token expires in 30 s: inside the 60 s skew.
	tok.ObtainedAt = time.Now().Add(30*time.Second - tok.ExpiresIn)
	st := &store{tok: tok}
	var r oauth.Refresher
	refresh := func(ctx context.Context, cur oauth.Token) (oauth.Token, error) {
		nt, err := d.client.Refresh(ctx, d.ep, cur.RefreshToken, cur.Scopes)
		if err != nil {
			return oauth.Token{}, err
		}
		st.put(nt)
		return nt, nil
	}
	key := oauth.Key{AppID: "app-1", Slot: "idp"}
	const n = 32
	var wg sync.WaitGroup
	got := make([]oauth.Token, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { got[i], errs[i] = r.Fresh(t.Context(), key, st.load, refresh) })
	}
	wg.Wait()
	if c := as.count("refresh_token"); c != 1 {
		t.Fatalf("refresh POSTs = %d for %d concurrent requests, want 1", c, n)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Fresh #%d = %v", i, errs[i])
		}
		if got[i].AccessToken != got[0].AccessToken {
			t.Fatalf("Fresh #%d got another access token", i)
		}
	}
	nt := got[0]
	if !nt.Rotated || nt.RefreshToken == old || nt.AccessToken == tok.AccessToken {
		t.Fatalf("refreshed token: rotated %t, same refresh token %t, same access token %t; want a rotated pair",
			nt.Rotated, nt.RefreshToken == old, nt.AccessToken == tok.AccessToken)
	}
	if oauth.NeedsRefresh(nt.Expiry(), time.Now()) {
		t.Fatal("the refreshed token still needs a refresh")
	}
	// Reuse of the rotated-out refresh token: refused as an expired grant.
	_, err := d.client.Refresh(t.Context(), d.ep, old, nativeScopes)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Class != oauth.Expired || oe.Code != "invalid_grant" {
		t.Fatalf("Refresh(old refresh token) = %v, want Expired invalid_grant", err)
	}
	// The new one works.
	if _, err := d.client.Refresh(t.Context(), d.ep, nt.RefreshToken, nt.Scopes); err != nil {
		t.Fatalf("Refresh(rotated refresh token) = %v", err)
	}
}

// TestRevoke revokes the refresh token, then the access token, at the
// OP's RFC 7009 endpoint; both are dead afterwards.
func TestRevoke(t *testing.T) {
	as, d, tok := connected(t)
	if errs := d.client.Revoke(t.Context(), d.ep, tok.AccessToken, tok.RefreshToken); len(errs) != 0 {
		t.Fatalf("Revoke = %v", errs)
	}
	if got, want := as.revocations(), []string{"refresh_token", "access_token"}; !slices.Equal(got, want) {
		t.Fatalf("revocations = %v, want %v", got, want)
	}
	_, err := d.client.Refresh(t.Context(), d.ep, tok.RefreshToken, nativeScopes)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Class != oauth.Expired {
		t.Fatalf("Refresh after revocation = %v, want Expired", err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, as.srv.URL+"/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	r, err := as.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode == http.StatusOK {
		t.Fatal("the revoked access token still works")
	}
	// No revoke endpoint: nothing is sent.
	before := len(as.revocations())
	ep := d.ep
	ep.RevokeURL = ""
	if errs := d.client.Revoke(t.Context(), ep, "a", "b"); errs != nil || len(as.revocations()) != before {
		t.Fatalf("Revoke without an endpoint = %v, sent %d", errs, len(as.revocations())-before)
	}
}

// TestRevokeFailureReported: a failing revoke endpoint is reported per
// token, and the second revocation is still attempted.
func TestRevokeFailureReported(t *testing.T) {
	as, d, tok := connected(t)
	as.setFault(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	errs := d.client.Revoke(t.Context(), d.ep, tok.AccessToken, tok.RefreshToken)
	if len(errs) != 2 || errs[0].Op != "revoke refresh token" || errs[1].Op != "revoke access token" || errs[0].Class != oauth.Transient {
		t.Fatalf("Revoke against a 503 = %v, want two Transient failures in order", errs)
	}
	if !slices.Contains(errs[0].Secrets, tok.RefreshToken) || !slices.Contains(errs[1].Secrets, tok.AccessToken) {
		t.Fatal("a revocation failure does not list the token it submitted")
	}
}

// TestTokenFaults injects faults at the token endpoint.
//
// conformance: P3-C13-24
func TestTokenFaults(t *testing.T) {
	as, d, tok := connected(t)
	refresh := func() (*oauth.Error, oauth.Token) {
		t.Helper()
		nt, err := d.client.Refresh(t.Context(), d.ep, tok.RefreshToken, nativeScopes)
		if err == nil {
			return nil, nt
		}
		var oe *oauth.Error
		if !errors.As(err, &oe) {
			t.Fatalf("Refresh = %v, want an *oauth.Error", err)
		}
		return oe, nt
	}

	t.Run("503", func(t *testing.T) {
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		})
		defer as.setFault(nil)
		oe, _ := refresh()
		if oe == nil || oe.Class != oauth.Transient || oe.Status != 503 {
			t.Fatalf("Refresh against a 503 = %v, want Transient", oe)
		}
		if strings.Contains(oe.Error(), "(") || !strings.Contains(oe.Error(), "unavailable") {
			t.Fatalf("Error() = %q, want \"unavailable\" and no code the provider never sent", oe.Error())
		}
		// Transient keeps the refresh token: once the endpoint is back, it
		// still works.
		as.setFault(nil)
		oe, nt := refresh()
		if oe != nil {
			t.Fatalf("Refresh after the 503 = %v, want the kept refresh token to work", oe)
		}
		tok = nt
	})

	t.Run("invalid_grant", func(t *testing.T) {
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"Refresh token revoked by an administrator named Mallory"}`)
		})
		defer as.setFault(nil)
		oe, _ := refresh()
		if oe == nil || oe.Class != oauth.Expired || oe.Code != "invalid_grant" {
			t.Fatalf("Refresh against invalid_grant = %v, want Expired invalid_grant", oe)
		}
		if strings.Contains(oe.Error(), "Mallory") {
			t.Fatalf("Error() = %q surfaces provider text", oe.Error())
		}
		if !strings.HasSuffix(oe.Error(), " (invalid_grant)") {
			t.Fatalf("Error() = %q, want the OAuth error code named", oe.Error())
		}
	})

	t.Run("html-500-echoing-secrets", func(t *testing.T) {
		as.setFault(echoForm)
		defer as.setFault(nil)
		// A refresh by the public client: the refresh token.
		oe, _ := refresh()
		checkEcho(t, oe, []string{tok.RefreshToken})

		// A code exchange by a confidential client posting its secret:
		// the code, the verifier and the client secret.
		ep := oauth.Endpoint{TokenURL: as.tokenURL, ClientID: webClient, ClientSecret: webSecret, AuthStyle: oauth.AuthPost}
		_, err := d.client.Exchange(t.Context(), ep, oauth.ExchangeParams{
			Code: "code-a1b2c3d4", RedirectURI: webOrigin + "/oauth/callback", Verifier: oauth.NewVerifier(),
		})
		errors.As(err, &oe)
		if len(oe.Secrets) != 3 {
			t.Fatalf("exchange secrets = %d values, want code, verifier and client secret", len(oe.Secrets))
		}
		checkEcho(t, oe, oe.Secrets)
		if !slices.Contains(oe.Secrets, "code-a1b2c3d4") || !slices.Contains(oe.Secrets, webSecret) {
			t.Fatal("the exchange's secret list misses the code or the client secret")
		}

		// Client credentials in Basic: the secret and its Basic form.
		ep.AuthStyle = oauth.AuthBasic
		_, err = d.client.ClientCredentials(t.Context(), ep, nil)
		errors.As(err, &oe)
		basic := base64.StdEncoding.EncodeToString([]byte(webClient + ":" + webSecret))
		checkEcho(t, oe, []string{basic})
		if !slices.Contains(oe.Secrets, webSecret) {
			t.Fatal("a Basic request's secret list misses the raw client secret")
		}
	})

	t.Run("client-credentials-scope", func(t *testing.T) {
		var scope []string // each request's scope parameter, "-" when absent
		var mu sync.Mutex
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			mu.Lock()
			if vs, ok := r.PostForm["scope"]; ok {
				scope = append(scope, strings.Join(vs, ","))
			} else {
				scope = append(scope, "-")
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"at-1","token_type":"Bearer","expires_in":60}`)
		})
		defer as.setFault(nil)
		ep := oauth.Endpoint{TokenURL: as.tokenURL, ClientID: webClient, ClientSecret: webSecret, AuthStyle: oauth.AuthPost}
		for _, scopes := range [][]string{nil, {"read", "write"}} {
			if _, err := d.client.ClientCredentials(t.Context(), ep, scopes); err != nil {
				t.Fatalf("ClientCredentials(%q) = %v", scopes, err)
			}
		}
		if got := strings.Join(scope, "|"); got != "-|read write" {
			t.Fatalf("scope parameters sent = %q, want none, then \"read write\"", got)
		}
	})

	t.Run("503-with-a-code", func(t *testing.T) {
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"temporarily_unavailable"}`)
		})
		defer as.setFault(nil)
		oe, _ := refresh()
		if oe == nil || oe.Class != oauth.Transient || !strings.Contains(oe.Error(), "refused the request (temporarily_unavailable)") {
			t.Fatalf("Refresh against a coded 503 = %v, want Transient, refused, with its code", oe)
		}
	})

	t.Run("body-at-the-cap", func(t *testing.T) {
		const answer = `{"access_token":"at-1","token_type":"Bearer","expires_in":60}`
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, answer)
		})
		defer as.setFault(nil)
		ep := oauth.Endpoint{TokenURL: as.tokenURL, ClientID: webClient, ClientSecret: webSecret, AuthStyle: oauth.AuthPost}
		for _, tc := range []struct {
			max  int64
			isOK bool
		}{{int64(len(answer)), true}, {int64(len(answer)) - 1, false}} {
			c := &oauth.Client{HTTP: as.srv.Client(), MaxBody: tc.max}
			if _, err := c.ClientCredentials(t.Context(), ep, nil); (err == nil) != tc.isOK {
				t.Errorf("ClientCredentials with a %d-byte answer and MaxBody %d = %v, want accepted %t", len(answer), tc.max, err, tc.isOK)
			}
		}
	})

	t.Run("200-carrying-an-error", func(t *testing.T) {
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}`)
		})
		defer as.setFault(nil)
		// GitHub's bad_verification_code is RFC 6749's invalid_grant.
		oe, _ := refresh()
		if oe == nil || oe.Code != "invalid_grant" || oe.Class != oauth.Expired || oe.Status != http.StatusOK {
			t.Fatalf("Refresh against a 200 carrying an error = %v, want Expired invalid_grant", oe)
		}
	})

	t.Run("redirect", func(t *testing.T) {
		var hits atomic.Int64
		elsewhere := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			io.WriteString(w, `{"access_token":"stolen","token_type":"bearer"}`)
		}))
		defer elsewhere.Close()
		for _, code := range []int{301, 302, 303, 307, 308} {
			as.setFault(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/token", code)
			})
			oe, _ := refresh()
			if oe == nil || oe.Class != oauth.Failed || oe.Status != code {
				t.Fatalf("Refresh answered %d = %v, want a Failed refusal", code, oe)
			}
		}
		as.setFault(nil)
		if hits.Load() != 0 {
			t.Fatalf("the redirect target got %d requests, want none", hits.Load())
		}
	})

	t.Run("oversized", func(t *testing.T) {
		as.setFault(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"%s","token_type":"bearer"}`, strings.Repeat("a", oauth.DefaultMaxBody))
		})
		defer as.setFault(nil)
		oe, _ := refresh()
		if oe == nil || oe.Class != oauth.Failed || len(oe.Body()) != oauth.DefaultMaxBody {
			t.Fatalf("Refresh with a %d-byte answer = %v, want Failed with the body capped", oauth.DefaultMaxBody+40, oe)
		}
	})

	t.Run("not-a-bearer-token", func(t *testing.T) {
		for _, body := range []string{
			`{"access_token":"abc","token_type":"mac"}`,
			`{"access_token":"abc"}`,
			`{"access_token":"abc\r\nX-Injected: 1","token_type":"bearer"}`,
			`{"access_token":"","token_type":"bearer"}`,
			`<html>ok</html>`,
		} {
			as.setFault(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
			oe, _ := refresh()
			if oe == nil || oe.Class != oauth.Failed {
				t.Fatalf("Refresh answered 200 %s = %v, want Failed", body, oe)
			}
		}
		as.setFault(nil)
	})

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		// The endpoint stalls until the subtest ends, whatever the client
		// does meanwhile.
		as.setFault(func(w http.ResponseWriter, r *http.Request) { <-release })
		defer as.setFault(nil)
		defer close(release)
		c := *d.client
		c.Timeout = 50 * time.Millisecond
		_, err := c.Refresh(t.Context(), d.ep, tok.RefreshToken, nativeScopes)
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Class != oauth.Transient || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Refresh against a stalled endpoint = %v, want Transient after the deadline", err)
		}
	})
}

// echoForm is a token endpoint's HTML 500 page that echoes everything it
// was sent, form and Authorization header.
func echoForm(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(b))
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, "<html><body><h1>Internal error</h1><pre>Authorization: %s\n", r.Header.Get("Authorization"))
	for k, vs := range form {
		fmt.Fprintf(w, "%s=%s\n", k, vs[0])
	}
	fmt.Fprint(w, "</pre></body></html>")
}

// checkEcho: the body holds each secret (so the caller's scrub has work),
// Secrets lists each, and no rendering of the error names one.
func checkEcho(t *testing.T, oe *oauth.Error, secrets []string) {
	t.Helper()
	if oe == nil || oe.Status != 500 || oe.Class != oauth.Transient {
		t.Fatalf("answer from an HTML 500 = %v, want a Transient *Error", oe)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Error("refresh failed", "err", oe)
	renderings := []string{oe.Error(), fmt.Sprint(oe), fmt.Sprintf("%+v", oe), fmt.Sprintf("%#v", oe), fmt.Sprintf("%v", error(oe)), logged.String()}
	if u := errors.Unwrap(oe); u != nil {
		renderings = append(renderings, u.Error())
	}
	for _, s := range secrets {
		if !bytes.Contains(oe.Body(), []byte(s)) {
			t.Errorf("the echo page does not hold a submitted secret; the test proves nothing")
		}
		if !slices.Contains(oe.Secrets, s) {
			t.Errorf("Secrets misses a submitted secret")
		}
		for _, r := range renderings {
			if strings.Contains(r, s) {
				t.Errorf("a rendering of the error names a submitted secret: %q", r)
			}
		}
	}
	ep := oauth.Endpoint{TokenURL: "https://id.example/token", ClientID: "c", ClientSecret: secrets[0]}
	tok := oauth.Token{AccessToken: secrets[0], RefreshToken: secrets[0]}
	logged.Reset()
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "ep", ep, "tok", tok)
	for _, r := range []string{fmt.Sprint(ep), fmt.Sprintf("%+v", ep), fmt.Sprintf("%#v", ep), fmt.Sprint(tok), fmt.Sprintf("%+v", tok), fmt.Sprintf("%#v", tok), logged.String()} {
		if strings.Contains(r, secrets[0]) {
			t.Errorf("an Endpoint or Token rendering names its secret: %q", r)
		}
	}
	if !strings.Contains(oe.Error(), "refused") && !strings.Contains(oe.Error(), "unavailable") {
		t.Errorf("Error() = %q, want a fixed sentence", oe.Error())
	}
}
