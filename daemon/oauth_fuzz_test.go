package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/transports"
)

type noLookups struct{}

func (noLookups) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("no network in this test")
}

// FuzzOAuthLoopbackCallback feeds the desktop callback's whole seat —
// the leaf's query parse, the state's shape, the flow lookup and the
// sealed record — arbitrary queries against a daemon with one live flow.
// Whatever arrives, nothing panics, nothing is exchanged (the daemon has
// no network), and a refusal is one of the fixed sentences, never an
// echo of the query.
func FuzzOAuthLoopbackCallback(f *testing.F) {
	// No network: every lookup fails, so nothing could leave even if a
	// query reached the exchange.
	d, err := New(context.Background(), Config{DataDir: f.TempDir() + "/data", Logger: slog.New(slog.DiscardHandler),
		Public: &transports.Public{Resolver: noLookups{}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	run(f, d)
	// A live oauth flow whose sealed half is a real record, so a state
	// naming it reaches Verify.
	fl, _, err := d.pairing.Flows().Start(context.Background(), pairing.FlowOAuth, "app", "slot", "", pairing.FlowPending, oauth.FlowLifetime)
	if err != nil {
		f.Fatal(err)
	}
	of, _ := oauth.NewFlow(oauth.FlowParams{AppID: "app", Slot: "slot", Surface: oauth.SurfaceDesktop, Port: 4747, PKCE: true}, d.now())
	of.ID = strings.TrimPrefix(fl.ID, "f_")
	if err := d.pairing.SealFlow(context.Background(), fl.ID, of); err != nil {
		f.Fatal(err)
	}
	key, _ := d.pairing.StateKey(context.Background())
	good, _ := oauth.State(key, of)
	for _, s := range []string{
		"code=abc&state=" + good,
		"error=access_denied&state=" + good,
		"code=abc&state=" + of.ID + "." + strings.Repeat("A", 43),
		"code=a&code=b&state=x",
		"state=" + good,
		"code=%zz&state=1",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		fl, err := d.pairing.OAuthLoopbackCallback(context.Background(), q)
		if err == nil {
			// Only the genuine state with an error answer ends a flow
			// without an exchange; a code always needs the network.
			if fl.State != pairing.FlowDenied && fl.State != pairing.FlowFailed {
				t.Fatalf("query %q ended the flow %q", q, fl.State)
			}
			return
		}
		if msg := err.Error(); len(q) > 8 && strings.Contains(msg, q) {
			t.Fatalf("the refusal echoes the query: %q", msg)
		}
	})
}
