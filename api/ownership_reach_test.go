package api

import (
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

// TestNetReachIsNeverStale: POST /v1/net checks the caller's reach of the
// app without SQL once the host has reached it (the daemon remembers held
// apps), and a revocation is never outrun by that memory: after the
// administrator unshares the app, or clears the owner's ownership, the
// very next call is APP_NOT_FOUND and sends nothing; a new share is
// honoured at once.
func TestNetReachIsNeverStale(t *testing.T) {
	e, up := newOwnedEnv(t)
	ctx := t.Context()
	a := e.host(e.pair("desktop", ""), "")
	aID := newestHost(t, e)
	b := e.host(e.pair("desktop", ""), "")
	bID := newestHost(t, e)
	if _, err := a.PutConnection(ctx, "mine", "mail", requirementJSON("mail", upHost)); err != nil {
		t.Fatal(err)
	}
	rv, err := a.Review(ctx, "mine", "mail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApproveReview(ctx, "mine", "mail", rv.ReviewToken); err != nil {
		t.Fatal(err)
	}
	if err := a.SetCredentials(ctx, "mine", "mail", map[string]string{"api_key": ownedSecret}); err != nil {
		t.Fatal(err)
	}
	get := NetRequest{AppID: "mine", Frame: netFrame("GET", "https://"+upHost+"/x"), Delivery: "app"}
	send := func(c *Client, who string) error {
		t.Helper()
		out, err := c.Net(ctx, get)
		if err == nil && !strings.Contains(string(out), `"ok":true`) {
			t.Fatalf("%s: Net = %s", who, out)
		}
		return err
	}
	sent := func() int { up.mu.Lock(); defer up.mu.Unlock(); return len(up.seen) }

	for range 2 { // the second call is answered by the remembered reach
		if err := send(a, "A, the owner"); err != nil {
			t.Fatal(err)
		}
	}
	wantAPIError(t, send(b, "B, not shared"), 404, errcode.AppNotFound)

	if _, err := e.ctl.ShareApp(ctx, "mine", bID); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := send(b, "B, shared"); err != nil {
			t.Fatalf("B after the share: %v", err)
		}
	}
	if _, err := e.ctl.UnshareApp(ctx, "mine", bID); err != nil {
		t.Fatal(err)
	}
	before := sent()
	wantAPIError(t, send(b, "B, unshared"), 404, errcode.AppNotFound)
	if _, err := e.ctl.UnshareApp(ctx, "mine", aID); err != nil { // A's ownership cleared
		t.Fatal(err)
	}
	wantAPIError(t, send(a, "A, ownership cleared"), 404, errcode.AppNotFound)
	if n := sent(); n != before {
		t.Errorf("the upstream saw %d requests after the revocations, want none", n-before)
	}
	if _, err := e.ctl.ShareApp(ctx, "mine", bID); err != nil {
		t.Fatal(err)
	}
	if err := send(b, "B, shared again"); err != nil {
		t.Fatalf("B after sharing again: %v", err)
	}
}
