package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
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
	if _, err := td.d.ProposeUser(ctx, "player", "music", decl); err != nil {
		t.Fatal(err)
	}
	if _, err := td.d.Approve(ctx, "player", "music"); err != nil {
		t.Fatal(err)
	}
	if err := td.d.SetCredentials(ctx, "player", "music", map[string]string{"client_id": "my-spotify-app"}); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var errb strings.Builder
	done := make(chan int, 1)
	go func() {
		e := env{stdin: strings.NewReader(""), stdout: pw, stderr: &errb, getenv: func(string) string { return "" }}
		done <- dispatch(ctx, e, []string{"ctl", "--data-dir", td.dir, "connect", "player", "music"})
		pw.Close()
	}()
	var authorize string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "https://") {
			authorize = l
			break
		}
	}
	go io.Copy(io.Discard, pr)
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
	select {
	case code := <-done:
		if code != exitNo || !strings.Contains(errb.String(), "denied: the sign-in was declined at the provider") {
			t.Fatalf("ctl connect = %d, stderr %q", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ctl connect did not end")
	}
}
