package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/oauth/oauthtest"
	"github.com/snug/snugd/transports"
)

// TestCtlConnect: snugd ctl connect prints the authorize URL, waits, and
// exits 1 with the flow's fixed sentence when the provider's redirect to
// the loopback callback says the person declined; the page the browser
// gets names nothing.
func TestCtlConnect(t *testing.T) {
	td := startDaemon(t)
	ctx := t.Context()
	decl, _ := json.Marshal(map[string]any{
		"slot": "music", "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
		"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
		"declaredApiHosts": []any{"api.spotify.com"},
	})
	if _, err := td.d.Proposers().ProposeUser(ctx, "player", "music", decl); err != nil {
		t.Fatal(err)
	}
	if _, err := td.d.Grants().Approve(ctx, "player", "music"); err != nil {
		t.Fatal(err)
	}
	if err := td.d.Grants().SetCredentials(ctx, "player", "music", map[string]string{"client_id": "my-spotify-app"}); err != nil {
		t.Fatal(err)
	}
	authorize, _, wait := runCtlConnect(t, td, "player", "music")
	u, err := url.Parse(authorize)
	if err != nil || u.Host != "accounts.spotify.com" || u.Query().Get("redirect_uri") != fmt.Sprintf("http://127.0.0.1:%d/oauth/callback", td.port) {
		t.Fatalf("authorize URL = %q", authorize)
	}
	cb := fmt.Sprintf("http://127.0.0.1:%d/oauth/callback?%s", td.port, url.Values{"error": {"access_denied"}, "state": {u.Query().Get("state")}}.Encode())
	resp, err := http.Get(cb)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(page), "spotify") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("callback page = %d %s", resp.StatusCode, page)
	}
	if code, _, errOut := wait(); code != exitNo || !strings.Contains(errOut, "denied: the sign-in was declined at the provider") {
		t.Fatalf("ctl connect = %d, stderr %q", code, errOut)
	}
}

// runCtlConnect runs snugd ctl connect app slot against td and reads its
// output up to the authorize URL it prints. It returns the URL ("" if the
// command printed none before it ended), what it printed until then, and
// wait, which returns the exit code with all it wrote to stdout and
// stderr (bounded in time).
func runCtlConnect(t *testing.T, td *testDaemon, app, slot string) (authorize, printed string, wait func() (code int, stdout, stderr string)) {
	t.Helper()
	pr, pw := io.Pipe()
	var outb, errb strings.Builder
	done := make(chan int, 1)
	go func() {
		e := env{stdin: strings.NewReader(""), stdout: pw, stderr: &errb, getenv: func(string) string { return "" }}
		done <- dispatch(t.Context(), e, []string{"ctl", "--data-dir", td.dir, "connect", app, slot})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		outb.WriteString(sc.Text() + "\n")
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "https://") {
			authorize = l
			break
		}
	}
	printed = outb.String()
	copied := make(chan struct{})
	go func() { io.Copy(&outb, pr); close(copied) }()
	return authorize, printed, func() (int, string, string) {
		t.Helper()
		select {
		case code := <-done:
			<-copied
			return code, outb.String(), errb.String()
		case <-time.After(20 * time.Second):
			t.Fatal("ctl connect did not end")
			return 0, "", ""
		}
	}
}

// TestCtlConnectAndRevokeAgainstTheOP: against zitadel's OP (reached
// through the shipped entries' hosts by an injected resolver and dialer,
// with no test switch in the registry), snugd ctl connect prints the authorize URL, the scripted
// user signs in, the browser follows the redirect to the loopback
// callback, and ctl connect exits 0 saying the connection is connected.
// snugd ctl revoke of a client-credentials row POSTs the RFC 7009
// revocation; zitadel's example storage refuses it for that client, and
// ctl revoke says the credentials are wiped and that the provider did
// not confirm, exit 0 (the wipe happened), in text and in --json.
func TestCtlConnectAndRevokeAgainstTheOP(t *testing.T) {
	op := oauthtest.New(t, "accounts.spotify.com", "api.spotify.com", "id.twitch.tv", "api.twitch.tv")
	td := startDaemonVersion(t, buildVersion(), func(c *daemon.Config) {
		c.Public = &transports.Public{Resolver: &noNetwork{}, Dial: op.Dial, RootCAs: op.Roots()}
	})
	ctx := t.Context()
	row := func(app, slot string, decl map[string]any, values map[string]string) {
		t.Helper()
		b, _ := json.Marshal(decl)
		if _, err := td.d.Proposers().ProposeUser(ctx, app, slot, b); err != nil {
			t.Fatal(err)
		}
		if _, err := td.d.Grants().Approve(ctx, app, slot); err != nil {
			t.Fatal(err)
		}
		if err := td.d.Grants().SetCredentials(ctx, app, slot, values); err != nil {
			t.Fatal(err)
		}
	}
	row("player", "music", map[string]any{
		"slot": "music", "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
		"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
		"declaredApiHosts": []any{"api.spotify.com"},
	}, map[string]string{"client_id": oauthtest.NativeClient})

	authorize, printed, wait := runCtlConnect(t, td, "player", "music")
	if authorize == "" {
		t.Fatalf("ctl connect printed no authorize URL: %q", printed)
	}
	cb := op.SignIn(ctx, t, authorize)
	if cb.Host != fmt.Sprintf("127.0.0.1:%d", td.port) {
		t.Fatalf("the OP redirected to %s", cb.Redacted())
	}
	resp, err := http.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Connected.") {
		t.Fatalf("callback page = %d %s", resp.StatusCode, page)
	}
	if code, out, errOut := wait(); code != exitOK || !strings.Contains(out, "player/music: connected") || strings.Contains(out, cb.Query().Get("code")) {
		t.Fatalf("ctl connect = %d\n%s%s", code, out, errOut)
	}
	// Signed in: connecting again without a terminal needs --yes, and
	// nothing starts.
	if code, out, errOut := td.ctl(t, "", "connect", "player", "music"); code != exitUsage || strings.Contains(out, "https://") ||
		!strings.Contains(errOut, "player/music is already signed in since ") || !strings.Contains(errOut, "pass --yes to replace it") {
		t.Fatalf("ctl connect on a signed-in connection = %d\n%s%s", code, out, errOut)
	}

	twitch := map[string]any{
		"slot": "games", "provider": map[string]any{"name": "Twitch"}, "kind": "oauth2_client_creds",
		"fields": []any{
			map[string]any{"key": "client_id", "label": "Client ID", "type": "text"},
			map[string]any{"key": "client_secret", "label": "Client secret", "type": "secret"},
		},
		"endpoints":        map[string]any{"token": "https://id.twitch.tv/oauth2/token", "revoke": "https://id.twitch.tv/oauth2/revoke"},
		"declaredApiHosts": []any{"api.twitch.tv"},
	}
	for _, app := range []string{"stats", "stats2"} {
		row(app, "games", twitch, map[string]string{"client_id": oauthtest.ServiceID, "client_secret": oauthtest.ServiceKey})
		// The first request fetches the token (client credentials).
		frame := `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://api.twitch.tv/helix/games/top?first=1","method":"GET"}`
		if res := td.d.Fetch().Net(ctx, fetch.NetCall{AppID: app, Frame: []byte(frame), Delivery: fetch.DeliveryApp}); res.Status != http.StatusOK {
			t.Fatalf("GET api.twitch.tv for %s = %+v", app, res)
		}
	}
	code, out, errOut := td.ctl(t, "", "revoke", "stats", "games")
	if code != exitOK || !strings.Contains(out, "stats/games revoked; its credentials are wiped") || !strings.Contains(out, "the provider confirmed the revocation") {
		t.Fatalf("ctl revoke = %d\n%s%s", code, out, errOut)
	}
	code, out, _ = td.ctl(t, "", "revoke", "stats2", "games", "--json")
	var j struct {
		Connection       api.ConnectionJSON `json:"connection"`
		RemoteRevocation string             `json:"remoteRevocation"`
		Remote           struct {
			Outcome string `json:"outcome"`
		} `json:"remote"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &j) != nil || j.Connection.Status != "revoked" || j.RemoteRevocation != "" || j.Remote.Outcome != "revoked" {
		t.Fatalf("ctl revoke --json = %d\n%s", code, out)
	}
	// Twitch's own revocation: one POST per row, client_id and token only.
	r := op.RevokeRequests()
	if len(r) != 2 {
		t.Fatalf("the OP saw revocation requests %+v, want one per row", r)
	}
	for _, q := range r {
		if !slices.Equal(q.Fields, []string{"client_id", "token"}) || q.Authorization != "none" {
			t.Fatalf("revocation request %+v, want client_id and token only", q)
		}
	}
}
