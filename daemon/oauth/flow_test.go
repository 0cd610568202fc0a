package oauth_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/oauth"
)

var nativeScopes = []string{"openid", "offline_access"}

// desktopSetup is an OP, a miniDaemon for the native (public, PKCE)
// client, and its loopback callback listener.
func desktopSetup(t *testing.T) (*authServer, *miniDaemon) {
	t.Helper()
	as := newAuthServer(t)
	c := &oauth.Client{HTTP: as.srv.Client()}
	d := newMiniDaemon(t, c, oauth.Endpoint{TokenURL: as.tokenURL, RevokeURL: as.revokeURL, ClientID: nativeClient}, nativeScopes)
	d.serveLoopback(t)
	return as, d
}

func desktopFlow(t *testing.T, d *miniDaemon, as *authServer) (oauth.Flow, string) {
	t.Helper()
	return d.start(t, oauth.FlowParams{AppID: "app-1", Slot: "idp", Surface: oauth.SurfaceDesktop, Port: d.port, PKCE: true}, as.authorizeURL, nil)
}

// TestAuthCodePKCEDesktop runs the whole desktop flow against the OP: the
// authorize URL, the user signing in, the OP's redirect to the loopback
// callback, state verification, the PKCE code exchange, and the plain page.
//
// conformance: P3-C13-17, P3-C13-18
func TestAuthCodePKCEDesktop(t *testing.T) {
	as, d := desktopSetup(t)
	f, authURL := desktopFlow(t, d, as)

	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") != oauth.Challenge(f.Verifier) {
		t.Fatalf("authorize URL %s: want code_challenge_method=S256 and the verifier's challenge", authURL)
	}
	if q.Get("redirect_uri") != f.RedirectURI || !strings.HasPrefix(f.RedirectURI, "http://127.0.0.1:") {
		t.Fatalf("redirect_uri = %q, want the loopback callback on 127.0.0.1", q.Get("redirect_uri"))
	}

	resp := as.userAgent(nil).signIn(t.Context(), t, authURL)
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(page) != pageDone {
		t.Fatalf("callback page = %d %q, want 200 %q", resp.StatusCode, page, pageDone)
	}
	if resp.Request.URL.Host != "127.0.0.1:"+itoa(d.port) {
		t.Fatalf("the sign-in ended at %s, want the loopback callback", resp.Request.URL)
	}
	tok := d.lastToken(t)
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn <= 0 {
		t.Fatalf("token: access %t refresh %t type %q expires %v; want all", tok.AccessToken != "", tok.RefreshToken != "", tok.TokenType, tok.ExpiresIn)
	}
	if strings.Contains(string(page), tok.AccessToken) || strings.Contains(string(page), "127.0.0.1") {
		t.Fatal("the callback page names a token or a host")
	}
	if n := as.count("authorization_code"); n != 1 {
		t.Fatalf("code exchange POSTs = %d, want 1", n)
	}
	// The token works at the OP's userinfo endpoint.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, as.srv.URL+"/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	r, err := as.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("userinfo with the token = %d, want 200", r.StatusCode)
	}
}

// callbackQuery signs the user in and returns the query the OP redirected
// to the callback with, without delivering it.
func callbackQuery(t *testing.T, as *authServer, authURL, callbackHost string) string {
	t.Helper()
	resp := as.userAgent(func(u *url.URL) bool { return u.Host == callbackHost }).signIn(t.Context(), t, authURL)
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in ended with %d, want a redirect to the callback", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Host != callbackHost || loc.Path != oauth.CallbackPath {
		t.Fatalf("redirect to %q, want %s%s", resp.Header.Get("Location"), callbackHost, oauth.CallbackPath)
	}
	return loc.RawQuery
}

// TestCallbackRefusals: a tampered state, a replayed callback and an
// expired flow are refused before any code is exchanged.
//
// conformance: P3-C13-18, P3-C13-19
func TestCallbackRefusals(t *testing.T) {
	as, d := desktopSetup(t)
	desktop := oauth.Callback{Surface: oauth.SurfaceDesktop}
	host := "127.0.0.1:" + itoa(d.port)

	t.Run("tampered-state", func(t *testing.T) {
		_, authURL := desktopFlow(t, d, as)
		q, _ := url.ParseQuery(callbackQuery(t, as, authURL, host))
		before := as.count("authorization_code")
		state := q.Get("state")
		for i, tampered := range []string{
			flipLast(state),                        // the MAC
			flipFirst(state),                       // the flow ID
			state[:len(state)-1],                   // shortened
			strings.SplitN(state, ".", 2)[0],       // the MAC dropped
			strings.SplitN(state, ".", 2)[0] + ".", // an empty MAC
		} {
			q2 := cloneQuery(q)
			q2.Set("state", tampered)
			_, err := d.callback(t.Context(), q2.Encode(), desktop)
			wantErr(t, "callback(tampered state "+itoa(i)+")", err, oauth.ErrBadState)
		}
		if n := as.count("authorization_code"); n != before {
			t.Fatalf("code exchange POSTs = %d after tampering, want %d", n, before)
		}
		// The genuine answer still works once.
		if _, err := d.callback(t.Context(), q.Encode(), desktop); err != nil {
			t.Fatalf("genuine callback = %v", err)
		}
	})

	t.Run("replay", func(t *testing.T) {
		_, authURL := desktopFlow(t, d, as)
		raw := callbackQuery(t, as, authURL, host)
		if _, err := d.callback(t.Context(), raw, desktop); err != nil {
			t.Fatalf("first callback = %v", err)
		}
		before := as.count("authorization_code")
		_, err := d.callback(t.Context(), raw, desktop)
		wantErr(t, "replayed callback", err, oauth.ErrFlowUsed)
		if n := as.count("authorization_code"); n != before {
			t.Fatalf("a replay posted the code again (%d POSTs, want %d)", n, before)
		}
	})

	t.Run("expired", func(t *testing.T) {
		_, authURL := desktopFlow(t, d, as)
		raw := callbackQuery(t, as, authURL, host)
		d.advance(oauth.FlowLifetime)
		defer d.advance(-oauth.FlowLifetime)
		before := as.count("authorization_code")
		_, err := d.callback(t.Context(), raw, desktop)
		wantErr(t, "callback after ten minutes", err, oauth.ErrFlowExpired)
		if n := as.count("authorization_code"); n != before {
			t.Fatalf("an expired flow posted its code (%d POSTs, want %d)", n, before)
		}
	})

	t.Run("web-callback-for-desktop-flow", func(t *testing.T) {
		_, authURL := desktopFlow(t, d, as)
		raw := callbackQuery(t, as, authURL, host)
		_, err := d.callback(t.Context(), raw, oauth.Callback{Surface: oauth.SurfaceWeb, HostID: "h1", Origin: webOrigin})
		wantErr(t, "desktop flow's answer on the web route", err, oauth.ErrWrongCallback)
	})
}

// TestWebSurface runs the origin-callback posture with the confidential
// web client (client_secret_basic): the host's page receives code and
// state and hands them over; only the host and origin the flow was
// started for are accepted.
func TestWebSurface(t *testing.T) {
	as := newAuthServer(t)
	c := &oauth.Client{HTTP: as.srv.Client()}
	d := newMiniDaemon(t, c, oauth.Endpoint{TokenURL: as.tokenURL, RevokeURL: as.revokeURL, ClientID: webClient, ClientSecret: webSecret}, []string{"openid", "offline_access"})
	start := func() string {
		_, authURL := d.start(t, oauth.FlowParams{AppID: "app-1", Slot: "idp", HostID: "host-a", Surface: oauth.SurfaceWeb, Origin: webOrigin, PKCE: true}, as.authorizeURL, nil)
		return callbackQuery(t, as, authURL, "host.example")
	}
	at := oauth.Callback{Surface: oauth.SurfaceWeb, HostID: "host-a", Origin: webOrigin}

	for _, tc := range []struct {
		name string
		at   oauth.Callback
	}{
		{"another-host", oauth.Callback{Surface: oauth.SurfaceWeb, HostID: "host-b", Origin: webOrigin}},
		{"another-origin", oauth.Callback{Surface: oauth.SurfaceWeb, HostID: "host-a", Origin: "https://evil.example"}},
		{"desktop-route", oauth.Callback{Surface: oauth.SurfaceDesktop}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := start()
			before := as.count("authorization_code")
			_, err := d.callback(t.Context(), raw, tc.at)
			wantErr(t, "callback from "+tc.name, err, oauth.ErrWrongCallback)
			if n := as.count("authorization_code"); n != before {
				t.Fatalf("a refused callback posted its code")
			}
		})
	}
	t.Run("its-host", func(t *testing.T) {
		tok, err := d.callback(t.Context(), start(), at)
		if err != nil || tok.AccessToken == "" {
			t.Fatalf("callback from the flow's host = %v", err)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func flipLast(s string) string  { return s[:len(s)-1] + flip(s[len(s)-1]) }
func flipFirst(s string) string { return flip(s[0]) + s[1:] }
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
