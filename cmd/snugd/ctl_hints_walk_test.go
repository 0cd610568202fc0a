package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/transports"

	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/pairing"
)

// walkKind is one kind of connection a person meets, walked through its
// states by TestHintsWalkEveryKind.
type walkKind struct {
	name      string
	app, slot string
	req       map[string]any // nil: testdata's Coinbase Exchange requirement
	// typed is what a person types for it (credentials set, on stdin);
	// nil when a ceremony fills everything.
	typed map[string]string
	// approved is the hint of the approved row before anything is
	// stored; follow is what the printed command must reach, in its
	// output or its error.
	approved, follow string
	// ceremony: a sign-in or a pairing connects it, not typed fields.
	// Those rows are connected by their ceremonies in their own tests
	// (ctl_pair_test.go, ctl_pair_link_linux_test.go, ctl_connect_test.go)
	// and through the daemon's summaries in daemon/hints_walk_test.go.
	ceremony bool
	// broken marks the row the way snugd marks it when the provider or
	// the device turns it down, and the hint that then names the step.
	broken      func(t *testing.T, td *testDaemon)
	brokenHints []string
}

// walkKinds is every kind: an exchange's three typed fields, a one-field
// API key, an OAuth sign-in, a SimpleFIN claim, a Hue LAN pairing and a
// simulator device link. The ceremony rows borrow the shipped registry's
// entries, so their pairing seats are the registry's.
func walkKinds() []walkKind {
	return []walkKind{
		{
			name: "exchange", app: "trader", slot: "coinbase-exchange",
			typed:    map[string]string{"api_key": cbKey, "api_secret": cbSecret(), "passphrase": cbPassphrase},
			approved: "no credentials stored: snugd ctl credentials set trader coinbase-exchange",
			broken: func(t *testing.T, td *testDaemon) {
				td.d.Grants().MarkConnection(t.Context(), "trader", "coinbase-exchange", grants.ConnError, "the exchange refused the key")
			},
			brokenHints: []string{"the connection reports an error (the exchange refused the key): snugd ctl credentials set trader coinbase-exchange"},
		},
		{
			name: "api key", app: "weather", slot: "weather",
			req: map[string]any{
				"slot": "weather", "provider": map[string]any{"name": "OpenWeather"}, "kind": "api_key",
				"fields":           []any{map[string]any{"key": "api_key", "label": "API key", "type": "secret"}},
				"request":          map[string]any{"queryTemplate": map[string]any{"appid": "{{api_key}}"}},
				"declaredApiHosts": []any{"api.openweathermap.org"},
			},
			typed:    map[string]string{"api_key": "owm-key-9c2e"},
			approved: "no credentials stored: snugd ctl credentials set weather weather",
			broken: func(t *testing.T, td *testDaemon) {
				td.d.Grants().MarkConnection(t.Context(), "weather", "weather", grants.ConnExpired, "")
			},
			brokenHints: []string{"the token expired: store new credentials: snugd ctl credentials set weather weather"},
		},
		{
			name: "oauth", app: "player", slot: "music",
			req: map[string]any{
				"slot": "music", "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
				"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
				"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
				"declaredApiHosts": []any{"api.spotify.com"},
			},
			typed:    map[string]string{"client_id": "my-client"},
			approved: "no credentials stored: snugd ctl credentials set player music, then snugd ctl connect player music",
			ceremony: true,
			follow:   "Open this address in a browser on this computer and sign in:",
			broken: func(t *testing.T, td *testDaemon) {
				td.d.Grants().MarkConnection(t.Context(), "player", "music", grants.ConnExpired, pairing.OauthExpiredMessage)
			},
			brokenHints: []string{"the token expired: sign in again: snugd ctl connect player music"},
		},
		{
			name: "simplefin claim", app: "app", slot: "bank",
			req: map[string]any{
				"slot": "bank", "provider": map[string]any{"name": "SimpleFIN"}, "kind": "basic_auth",
				"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
				"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
				"declaredApiHosts": []any{"beta-bridge.simplefin.org"},
			},
			approved: "not paired yet: snugd ctl pair claim app bank", ceremony: true,
			follow: "no setup token on standard input",
			broken: func(t *testing.T, td *testDaemon) {
				td.d.Grants().MarkConnection(t.Context(), "app", "bank", grants.ConnError, pairing.AccessRevokedMessage)
			},
			brokenHints: []string{"the connection reports an error (" + pairing.AccessRevokedMessage + "): snugd ctl pair claim app bank"},
		},
		{
			name: "hue lan", app: "app", slot: "hue",
			req: map[string]any{
				"slot": "hue", "provider": map[string]any{"name": "Philips Hue"}, "kind": "api_key",
				"fields":  []any{map[string]any{"key": "application_key", "label": "Application key", "type": "secret"}},
				"request": map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{application_key}}"}},
				"lanHost": map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
			},
			approved: "not paired yet: snugd ctl pair lan app hue", ceremony: true,
			follow: "looking for Hue bridges on the local network",
			broken: func(t *testing.T, td *testDaemon) {
				td.d.Grants().MarkConnection(t.Context(), "app", "hue", grants.ConnError, pairing.PinChangedMessage)
			},
			brokenHints: []string{"the connection reports an error (" + pairing.PinChangedMessage + "): snugd ctl pair lan app hue",
				// Never paired here, so nothing is pinned: pair lan, not
				// --repin (which daemon/hints_walk_test.go sends a pinned
				// row to).
				"no certificate pinned for the LAN device yet: pairing pins it: snugd ctl pair lan app hue"},
		},
		{
			name: "simulator link", app: "app", slot: "chat",
			req: map[string]any{
				"slot": "chat", "provider": map[string]any{"name": "Snug Simulator"}, "kind": "linked_device",
				"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
				"declaredApiHosts": []any{"sim.sidecar.invalid"},
			},
			approved: "not paired yet: snugd ctl pair link app chat", ceremony: true,
			// This daemon runs no helper: the link's first step, asking
			// the helper for a code, is as far as it gets.
			follow: "helper",
			broken: func(t *testing.T, td *testDaemon) {
				td.d.Grants().MarkConnection(t.Context(), "app", "chat", grants.ConnError, "the device was unlinked")
			},
			brokenHints: []string{"the connection reports an error (the device was unlinked): snugd ctl pair link app chat"},
		},
	}
}

// attentionOf returns the text of row's needs-attention line in a ctl
// status or ctl apps output, "" when it has none.
func attentionOf(out, row string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "  "+row+": "); ok {
			lines = append(lines, rest)
		}
	}
	return lines
}

// hintCommand and commandsIn find the snugd ctl commands a hint prints,
// as arguments.
var hintCommand = regexp.MustCompile(`snugd ctl ([a-z][a-z -]*[a-z0-9-]*(?: [a-z0-9][a-z0-9-]*)*)`)

func commandsIn(hint string) [][]string {
	var cmds [][]string
	for _, m := range hintCommand.FindAllStringSubmatch(hint, -1) {
		words := strings.Fields(strings.Split(m[1], ",")[0])
		cmds = append(cmds, words)
	}
	return cmds
}

// ctlFor runs snugd ctl args… in-process until it ends or for at most d
// (a ceremony that waits for a person is cut short: its first step is
// what the walk checks).
func (td *testDaemon) ctlFor(t *testing.T, d time.Duration, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var out, errb bytes.Buffer
	e := env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := dispatch(ctx, e, append([]string{"ctl", "--data-dir", td.dir}, args...))
	return code, out.String(), errb.String()
}

// TestHintsWalkEveryKind walks each kind's row through ctl status and ctl
// apps at each state — proposed, approved and not connected, connected,
// turned down (expired, refused, a changed certificate), credential
// unreadable — and follows every printed command: it is the right one for the kind (pair claim,
// pair lan, pair link, connect, or credentials set only for typed
// fields), names APP and SLOT, and running it is accepted or reaches the
// ceremony's first step.
func TestHintsWalkEveryKind(t *testing.T) {
	td := startDaemon(t)
	kinds := walkKinds()
	for _, k := range kinds {
		var raw []byte
		var err error
		if k.req == nil {
			raw, err = os.ReadFile("testdata/coinbase-exchange.json")
		} else {
			raw, err = json.Marshal(k.req)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := td.d.Proposers().ProposeUser(t.Context(), k.app, k.slot, raw); err != nil {
			t.Fatalf("ProposeUser %s/%s: %v", k.app, k.slot, err)
		}
	}
	// hints reads each row's lines from ctl status and ctl apps, which
	// must agree.
	hints := func(t *testing.T, k walkKind) []string {
		t.Helper()
		var got [2][]string
		for i, cmd := range []string{"status", "apps"} {
			code, out, errOut := td.ctl(t, "", cmd)
			if code != exitOK {
				t.Fatalf("ctl %s = %d, %q", cmd, code, errOut)
			}
			got[i] = attentionOf(out, k.app+"/"+k.slot)
		}
		if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
			t.Errorf("%s: ctl status says %q, ctl apps %q", k.name, got[0], got[1])
		}
		return got[0]
	}
	// wrongStep fails when a hint names a command that is not the
	// kind's, or one without APP and SLOT.
	wrongStep := func(t *testing.T, k walkKind, hint string) {
		t.Helper()
		cmds := commandsIn(hint)
		if len(cmds) == 0 {
			t.Errorf("%s: %q names no command", k.name, hint)
		}
		for _, c := range cmds {
			if c[0] == "status" || c[0] == "confirms" {
				continue
			}
			if len(c) < 3 || !strings.Contains(strings.Join(c, " "), " "+k.app+" "+k.slot) {
				t.Errorf("%s: %q: the command %q does not name %s %s", k.name, hint, c, k.app, k.slot)
			}
			if c[0] == "credentials" && k.typed == nil {
				t.Errorf("%s: %q sends a ceremony's row to credentials set", k.name, hint)
			}
		}
	}

	t.Run("proposed", func(t *testing.T) {
		for _, k := range kinds {
			got := hints(t, k)
			want := "a proposal waits: snugd ctl review " + k.app + " " + k.slot + ", then snugd ctl approve " + k.app + " " + k.slot
			if len(got) != 1 || got[0] != want {
				t.Errorf("%s proposed: %q, want %q", k.name, got, want)
			}
			for _, h := range got {
				wrongStep(t, k, h)
			}
			// Follow it: the review, then the approval (a person answers
			// its question on a terminal; --yes stands in here).
			if code, out, errOut := td.ctl(t, "", "review", k.app, k.slot); code != exitOK || !strings.Contains(out, k.slot) {
				t.Errorf("%s: the printed review = %d\n%s%s", k.name, code, out, errOut)
			}
			if code, out, errOut := td.ctl(t, "", "approve", k.app, k.slot, "--yes"); code != exitOK {
				t.Errorf("%s: the printed approve = %d\n%s%s", k.name, code, out, errOut)
			}
		}
	})

	t.Run("approved", func(t *testing.T) {
		for _, k := range kinds {
			got := hints(t, k)
			if len(got) == 0 || got[0] != k.approved {
				t.Errorf("%s approved: %q, want %q first", k.name, got, k.approved)
			}
			for _, h := range got {
				wrongStep(t, k, h)
				if strings.Contains(h, "first connection pins") {
					t.Errorf("%s: %q: pairing pins the certificate, not a first connection", k.name, h)
				}
			}
			// Follow the first printed command.
			cmd := commandsIn(k.approved)[0]
			if cmd[0] == "credentials" {
				var first map[string]string
				for key, v := range k.typed {
					first = map[string]string{key: v} // one field first: the rest is named next
					break
				}
				in, _ := json.Marshal(first)
				code, out, errOut := td.ctl(t, string(in), cmd...)
				if code != exitOK || strings.Contains(out, "set the rest") && len(k.typed) == 1 {
					t.Errorf("%s: the printed %q = %d\n%s%s", k.name, cmd, code, out, errOut)
				}
				if len(k.typed) == 1 {
					// A typed row is connected, with no next step; a
					// sign-in's client ID leaves the sign-in, named as
					// the next step: follow it.
					if strings.Contains(out, "not connected yet") != k.ceremony {
						t.Errorf("%s: after its one field: %q", k.name, out)
					}
					if k.ceremony {
						if want := "not connected yet: not signed in yet: snugd ctl connect " + k.app + " " + k.slot + "\n"; !strings.Contains(out, want) {
							t.Errorf("%s: after its one field: %q, want %q", k.name, out, want)
						}
						next := commandsIn(k.approved)[1]
						code, out, errOut := td.ctlFor(t, 3*time.Second, "", next...)
						if code == exitUsage || !strings.Contains(out+errOut, k.follow) {
							t.Errorf("%s: the printed %q = %d; want it to reach %q:\n%s%s", k.name, next, code, k.follow, out, errOut)
						}
					}
					continue
				}
				// What is left is named with its command; follow it too.
				left := hints(t, k)
				if len(left) != 1 || !strings.HasPrefix(left[0], "missing required fields: ") || !strings.HasSuffix(left[0], ": snugd ctl credentials set "+k.app+" "+k.slot) {
					t.Fatalf("%s: after one field: %q", k.name, left)
				}
				in, _ = json.Marshal(k.typed)
				if code, out, errOut := td.ctl(t, string(in), cmd...); code != exitOK {
					t.Errorf("%s: the printed %q = %d\n%s%s", k.name, cmd, code, out, errOut)
				}
				continue
			}
			code, out, errOut := td.ctlFor(t, 3*time.Second, "", cmd...)
			if code == exitUsage || !strings.Contains(out+errOut, k.follow) {
				t.Errorf("%s: the printed %q = %d; want it to reach %q:\n%s%s", k.name, cmd, code, k.follow, out, errOut)
			}
		}
	})

	t.Run("connected", func(t *testing.T) {
		for _, k := range kinds {
			if k.ceremony {
				continue
			}
			if got := hints(t, k); len(got) != 0 {
				t.Errorf("%s connected: %q, want nothing", k.name, got)
			}
		}
		_, out, _ := td.ctl(t, "", "apps")
		for _, k := range kinds {
			if k.ceremony {
				continue
			}
			if !regexp.MustCompile(`(?m)^\S*\s*` + regexp.QuoteMeta(k.slot) + `\s.*\sapproved\s+connected\b`).MatchString(out) {
				t.Errorf("%s: ctl apps does not show it connected:\n%s", k.name, out)
			}
		}
	})

	t.Run("turned down", func(t *testing.T) {
		for _, k := range kinds {
			k.broken(t, td)
			got := hints(t, k)
			if strings.Join(got, "\n") != strings.Join(k.brokenHints, "\n") {
				t.Errorf("%s turned down: %q, want %q", k.name, got, k.brokenHints)
			}
			for _, h := range got {
				wrongStep(t, k, h)
			}
		}
		// The --repin the Hue row is sent to is a flag pair lan takes:
		// it reaches the bridge's probe (refused here: no network).
		code, out, errOut := td.ctlFor(t, 3*time.Second, "", "pair", "lan", "app", "hue", "--repin")
		if code == exitUsage || strings.Contains(errOut, "flag provided but not defined") {
			t.Errorf("the printed pair lan --repin = %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("credential unreadable", func(t *testing.T) {
		// One bit of a stored ciphertext flips in the real file while
		// snugd is down; the next start's seal check finds it.
		td.stop()
		flipSealed(t, td.dir, "auth:trader:coinbase-exchange:api_secret")
		td2 := restartDaemon(t, td.dir)
		const row = "trader/coinbase-exchange"
		want := "credential unreadable: the stored value of field api_secret does not open under the master key: store it again: snugd ctl credentials set trader coinbase-exchange"
		var out string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, out, _ = td2.ctl(t, "", "apps"); strings.Contains(out, want) {
				break
			}
		}
		if got := attentionOf(out, row); len(got) != 1 || got[0] != want {
			t.Fatalf("ctl apps after the flip: %q, want %q:\n%s", got, want, out)
		}
		if !regexp.MustCompile(`(?m)^trader\s+coinbase-exchange\s.*\sapproved\s+unreadable\b`).MatchString(out) {
			t.Errorf("ctl apps does not read it unreadable:\n%s", out)
		}
		_, st, _ := td2.ctl(t, "", "status")
		if got := attentionOf(st, row); len(got) != 1 || got[0] != want || !strings.Contains(st, ", 1 with a credential unreadable\n") {
			t.Errorf("ctl status after the flip: %q:\n%s", got, st)
		}
		_, js, _ := td2.ctl(t, "", "apps", "--json")
		if !strings.Contains(js, `"credentials": "unreadable"`) || !strings.Contains(js, `"kind": "unreadable"`) {
			t.Errorf("ctl apps --json after the flip:\n%s", js)
		}
		// A row whose stored state does not open is listed, not a 500,
		// and sent to revoke and reconnect.
		td2.stop()
		flipSealed(t, td.dir, "auth:weather:weather:_connection")
		td2 = restartDaemon(t, td.dir)
		const stateHint = "credential unreadable: the connection's stored state does not open under the master key: revoke it and connect it again: snugd ctl revoke weather weather, then snugd ctl reconnect weather weather"
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, out, _ = td2.ctl(t, "", "apps"); strings.Contains(out, stateHint) {
				break
			}
		}
		if got := attentionOf(out, "weather/weather"); len(got) != 1 || got[0] != stateHint {
			t.Errorf("ctl apps after the state's flip: %q:\n%s", got, out)
		}
		if code, out, errOut := td2.ctl(t, "", "connections", "weather", "--json"); code != exitOK || !strings.Contains(out, `"status": "unreadable"`) {
			t.Errorf("connections of a row whose state does not open = %d\n%s%s", code, out, errOut)
		}
		for _, cmd := range commandsIn(stateHint) {
			if code, out, errOut := td2.ctl(t, "", append(cmd, "--json")...); code != exitOK {
				t.Errorf("the printed %q = %d\n%s%s", cmd, code, out, errOut)
			}
		}
		if _, out, _ := td2.ctl(t, "", "apps"); !strings.Contains(out, "weather/weather: a proposal waits: snugd ctl review weather weather") {
			t.Errorf("after revoke and reconnect the row is not a proposal again:\n%s", out)
		}

		// Follow it: storing the fields again connects the row.
		in, _ := json.Marshal(walkKinds()[0].typed)
		if code, out, errOut := td2.ctl(t, string(in), commandsIn(want)[0]...); code != exitOK {
			t.Fatalf("the printed credentials set = %d\n%s%s", code, out, errOut)
		}
		_, out, _ = td2.ctl(t, "", "apps")
		if got := attentionOf(out, row); len(got) != 0 || strings.Contains(out, "unreadable") {
			t.Errorf("after storing it again: %q:\n%s", got, out)
		}
	})
}

// flipSealed flips one bit inside the ciphertext stored under key in dir's
// snugd.db, through a connection of its own, as a disk error would.
func flipSealed(t *testing.T, dir, key string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "snugd.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var blob []byte
	if err := db.QueryRow("SELECT value FROM snug_secrets WHERE key = ?", key).Scan(&blob); err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	blob[len(blob)/2] ^= 0x04
	if _, err := db.Exec("UPDATE snug_secrets SET value = ? WHERE key = ?", blob, key); err != nil {
		t.Fatal(err)
	}
}

// restartDaemon starts a daemon again on dir, a stopped testDaemon's data
// directory, served on its ctl socket only.
func restartDaemon(t *testing.T, dir string) *testDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	offline := &noNetwork{}
	d, err := daemon.New(ctx, daemon.Config{
		DataDir: dir,
		Public:  &transports.Public{Resolver: offline, Dial: offline.dial},
		LAN:     &transports.LAN{Dial: offline.dial},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	runCore(t, d)
	sock, err := api.ListenCtl(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.DepsOf(d), api.Options{Version: buildVersion(), DrainTimeout: time.Second})
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ctx, nil, sock); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	stop := sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		d.Close()
	})
	t.Cleanup(stop)
	return &testDaemon{dir: dir, d: d, stop: stop}
}
