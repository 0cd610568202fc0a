package daemon

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/wire"
)

// TestOneSeat audits the package source: the credential read
// (slotSecrets, through readSecrets) and the outbound transports meet in
// one file, the executor's gates. A new file that reads credentials or
// calls a transport fails this test until it is reviewed and listed.
//
// conformance: P3-X14-01
func TestOneSeat(t *testing.T) {
	files, err := coreFiles()
	if err != nil {
		t.Fatal(err)
	}
	var readers, fetchers []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		reads, fetches := false, false
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/snug/snugd/transports" {
				fetches = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "readSecrets", "ReadSecrets", "slotSecrets", "SlotSecrets":
					reads = true
				case "public", "lan", "helper", "Public", "Lan", "side":
					fetches = true
				}
			}
			return true
		})
		if reads {
			readers = append(readers, name)
		}
		if fetches {
			fetchers = append(fetchers, name)
		}
	}
	var both []string
	for _, r := range readers {
		if slices.Contains(fetchers, r) {
			both = append(both, r)
		}
	}
	// fetch/fetch.go only wires the executor's fields (NewExecutor);
	// grants/custody.go defines SlotSecrets and calls no transport; the
	// transports (fetch_transport.go), the side client (side.go) and the
	// credential sources (fetch_inject.go) read no credential themselves.
	// pairing/oauthconn.go is gate 8's OAuth token seat: it reads the
	// slot's client fields and tokens and posts them to the token endpoint
	// through the executor's side client, behind the row's ceiling check.
	if want := []string{"fetch/fetch.go", "fetch/fetch_gates.go", "pairing/oauthconn.go"}; !slices.Equal(both, want) {
		t.Errorf("files that both read credentials and reach a transport = %v, want %v", both, want)
	}
}

// TestInjectionCeilingCheck: the render re-checks the URL it will send
// against the ceiling; a target that left the ceiling after gate 4 is
// refused and no credential is rendered into it.
//
// conformance: P3-X14-36
func TestInjectionCeilingCheck(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	idx := r.d.grants.Snapshot()
	g := idx.Apps["app1"].Row("ex")
	f := &fetch.Fetch{Call: fetch.NetCall{AppID: "app1"}, Index: idx, Grant: g, Host: apiHost,
		Req: wire.NetRequest{Method: "GET"}, Target: mustURL(t, "https://evil.example.com/x"), Header: fetch.AppHeader(nil)}
	if err := r.d.exec.Render(f, map[string]string{"api_key": secretKey}); err == nil || err.Code != errcode.NetHostBlocked {
		t.Fatalf("render(off-ceiling target) = %v, want NET_HOST_BLOCKED", err)
	}
	if f.SendURL != nil && strings.Contains(f.SendURL.String(), "appid") {
		t.Errorf("credentialed url kept: %s", f.SendURL)
	}
}

// TestNoArmingFromTheApp: nothing an app or a model sends through the
// executor arms a standing approval; only ArmStanding does, which the API
// serves to paired hosts and ctl alone.
//
// conformance: P3-S17-01
func TestNoArmingFromTheApp(t *testing.T) {
	r := newStandingRig(t)
	r.autoDecide(t, true, fetch.RememberSession)
	for _, del := range []fetch.Delivery{fetch.DeliveryApp, fetch.DeliveryLLM} {
		for _, f := range [][]byte{
			reply("T1", "T1"),
			frame("POST", "https://api.example.com/v1/standing", map[string]any{"body": `{"arm":true,"target":"T1","trigger":"reply"}`}),
			frame("POST", "https://api.example.com/v1/threads/T1/messages", map[string]any{"standing": true}),
		} {
			r.d.exec.Net(t.Context(), fetch.NetCall{AppID: "app1", Frame: f, Delivery: del})
		}
	}
	if s := r.d.exec.Standings(context.Background()); len(s) != 0 {
		t.Fatalf("an app or model request armed %+v", s)
	}
}
