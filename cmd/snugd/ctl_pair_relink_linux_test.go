package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/linkdevice"
)

// linkThroughDaemon links app1/chat through the daemon's flow, scanning
// each code the flow shows until it links.
func linkThroughDaemon(t *testing.T, td *testDaemon, sup *linkdevice.Supervisor) {
	t.Helper()
	f, err := td.d.Devices().StartLink(t.Context(), "app1", "chat", false)
	if err != nil {
		t.Fatal(err)
	}
	dir := sup.SessionDir(linkdevice.SessionKey{HelperID: "sim", AppID: "app1", Slot: "chat"})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		f, _ = td.d.Pairing().Flow(t.Context(), f.ID)
		if f.State == pairing.FlowLinked {
			return
		}
		if f.QR != "" {
			os.WriteFile(filepath.Join(dir, "scan"), []byte(f.QR), 0o600)
		}
	}
	t.Fatalf("the first link never completed: %+v", f)
}

// simThreads makes one request through app1/chat's link, as an app does.
func simThreads(t *testing.T, td *testDaemon, when string) {
	t.Helper()
	frame := `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://sim.sidecar.invalid/v1/threads","method":"GET"}`
	if res := td.d.Fetch().Net(t.Context(), fetch.NetCall{AppID: "app1", Frame: []byte(frame), Delivery: fetch.DeliveryApp}); res.Code != "" || res.Status != http.StatusOK {
		t.Fatalf("a request %s = %q %d; want served through the link", when, res.Code, res.Status)
	}
}

// TestCtlPairLinkRelink: on a linked slot, snugd ctl pair link without a
// terminal refuses with a sentence naming --yes and changes nothing;
// with --yes it starts the relink, and Ctrl-C cancels it saying the old
// link is kept, which then serves a request.
func TestCtlPairLinkRelink(t *testing.T) {
	td, sup := startLinkDaemon(t, "20s")
	linkThroughDaemon(t, td, sup)
	simThreads(t, td, "after the first link")

	var out, errb testutil.LogBuffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := dispatch(t.Context(), e, []string{"ctl", "--data-dir", td.dir, "pair", "link", "app1", "chat"})
	if code != exitUsage || !strings.Contains(errb.String(), "app1/chat is already linked since ") || !strings.Contains(errb.String(), "pass --yes to replace it") {
		t.Fatalf("pair link on a linked slot without a terminal = %d, %q %q; want refused naming --yes", code, out.String(), errb.String())
	}
	simThreads(t, td, "after the refused relink")

	ctx, cancel := context.WithCancel(t.Context())
	var out2, errb2 testutil.LogBuffer
	e = env{stdin: strings.NewReader(""), stdout: &out2, stderr: &errb2, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, e, []string{"ctl", "--data-dir", td.dir, "pair", "link", "app1", "chat", "--yes"})
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out2.String(), "Scan the code"); {
		if time.Now().After(deadline) {
			t.Fatalf("the relink never drew a code: %q %q", out2.String(), errb2.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	simThreads(t, td, "while the relink shows its code")
	cancel()
	if code := <-done; code != exitNo || !strings.Contains(out2.String(), "cancelled: the new device was not linked; the old link is kept") {
		t.Fatalf("cancelled relink = %d, %q %q", code, out2.String(), errb2.String())
	}
	simThreads(t, td, "after the cancelled relink")

	// The helper's session is lost (its directory wiped): after the next
	// request fails, ctl apps no longer says connected and names the fix.
	if err := sup.Unlink(t.Context(), linkdevice.SessionKey{HelperID: "sim", AppID: "app1", Slot: "chat"}); err != nil {
		t.Fatal(err)
	}
	frame := `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://sim.sidecar.invalid/v1/threads","method":"GET"}`
	if res := td.d.Fetch().Net(t.Context(), fetch.NetCall{AppID: "app1", Frame: []byte(frame), Delivery: fetch.DeliveryApp}); res.Code != "NET_AUTH_FAILED" {
		t.Fatalf("a request after the session was lost = %q", res.Code)
	}
	code, shown, errOut := td.ctl(t, "", "apps")
	if code != exitOK || !strings.Contains(shown, "link lost: run snugd ctl pair link app1 chat") {
		t.Fatalf("ctl apps after a lost link = %d\n%s%s", code, shown, errOut)
	}
	for _, line := range strings.Split(shown, "\n") {
		if strings.Contains(line, "chat") && strings.Contains(line, " connected") {
			t.Errorf("ctl apps still says connected: %q", line)
		}
	}
}
