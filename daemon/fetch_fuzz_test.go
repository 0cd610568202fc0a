package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/daemon/wire/wiretest"
)

// FuzzNet drives whole frames through the executor. Whatever the frame:
// Net does not panic; an answer is a valid net-response; no answer goes
// out without a recovered requestId; nothing carries the credential; and a
// frame gate 1 refuses reaches no later gate (no credential read, no
// upstream request, no lookup). Every dial goes to the loopback upstream
// through the rig's injected dialers.
//
// conformance: P3-X14-03
func FuzzNet(f *testing.F) {
	for _, s := range []string{
		string(frame("GET", "https://api.example.com/v1?x=1", nil)),
		string(frame("POST", "snug-connection://ex/v1", map[string]any{"body": "{}"})),
		string(frame("GET", "https://api.example.com/", map[string]any{"headers": map[string]any{"Authorization": "x"}})),
		string(frame("HEAD", "http://192.168.1.20/", map[string]any{"body": ""})),
		`{"type":"snug:net-request","v":2,"requestId":"r"}`,
		`not json`,
	} {
		f.Add(s)
	}
	r := newRig(f)
	r.connect(f, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.connect(f, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
	f.Fuzz(func(t *testing.T, raw string) {
		reads, ups, looks := r.reads.Load(), len(r.up.requests()), r.resolver.Lookups()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a mutating request is denied at once instead of waiting
		res := r.d.exec.Net(ctx, fetch.NetCall{AppID: "app1", Frame: []byte(raw), Delivery: fetch.DeliveryApp})
		_, perr := wire.ParseNetRequest([]byte(raw))
		if res.Answer {
			resp, err := wiretest.ParseNetResponse(res.Frame)
			if err != nil || resp.Validate() != nil {
				t.Fatalf("answer %s does not parse: %v", res.Frame, err)
			}
			if strings.Contains(string(res.Frame), "Secret") {
				t.Fatalf("answer carries the credential: %s", res.Frame)
			}
		} else if perr == nil {
			t.Fatalf("a parsed frame got no answer: %+v", res)
		}
		if perr != nil {
			if res.Code == "" || r.reads.Load() != reads || len(r.up.requests()) != ups || r.resolver.Lookups() != looks {
				t.Fatalf("refused frame went on: code %q", res.Code)
			}
		}
	})
}
