package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
)

// TestParkedConfirmBytesAreBounded: the queue's count bounds let 256
// confirms of 256 KiB each park at once (64 MiB held for callers). Past
// maxParkedBytes in total a new confirm is denied at once, without being
// parked or asked, while the count bounds still have room.
func TestParkedConfirmBytesAreBounded(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	body := strings.Repeat("x", 200<<10)
	per := fetch.ConfirmBytes(fetch.Confirm{Body: body, URL: "https://api.example.com/send", Host: "api.example.com", Method: "POST", Slot: "ex"})
	fit := fetch.MaxParkedBytes / per
	apps := fit/fetch.MaxParkedPerApp + 1
	for i := range apps {
		r.connect(t, fmt.Sprintf("app%d", i), apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var parked []<-chan fetch.NetResult
	for i := range fit {
		parked = append(parked, r.parkedNet(ctx, t, fmt.Sprintf("app%d", i/fetch.MaxParkedPerApp), post(body)))
		waitConfirms(t, r.d, i+1)
	}
	if len(r.d.exec.Confirms(context.Background())) >= fetch.MaxParked {
		t.Fatalf("the count bound is reached first (%d parked): the test proves nothing", len(r.d.exec.Confirms(context.Background())))
	}
	// The last app has room by count; the bytes have none.
	late, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	res, resp := r.netCtx(t, late, fmt.Sprintf("app%d", apps-1), post(body), fetch.DeliveryApp)
	if res.Code != errcode.NetConfirmDenied || !strings.Contains(resp.Error.Message, "too many") {
		t.Errorf("confirm past %d parked bytes = %q %+v, want NET_CONFIRM_DENIED at once", fetch.MaxParkedBytes, res.Code, resp.Error)
	}
	if n := len(r.d.exec.Confirms(context.Background())); n != fit {
		t.Errorf("parked = %d, want %d", n, fit)
	}
	// A small one still fits beside them.
	small := r.parkedNet(ctx, t, fmt.Sprintf("app%d", apps-1), post("{}"))
	waitConfirms(t, r.d, fit+1)
	cancel()
	for _, ch := range append(parked, small) {
		<-ch
	}
	if n := len(r.up.requests()); n != 0 {
		t.Errorf("upstream requests = %d, want 0", n)
	}
}
