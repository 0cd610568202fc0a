package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/transports"

	"github.com/snug/snugd/internal/testutil"
)

// testDaemon is a real daemon on a data directory in t.TempDir(), its API
// served on the ctl socket and on a loopback port named in config.json.
type testDaemon struct {
	dir  string
	d    *daemon.Daemon
	port int
	stop func() // shuts the daemon down; idempotent
}

func startDaemon(t *testing.T) *testDaemon {
	t.Helper()
	return startDaemonVersion(t, buildVersion())
}

// startDaemonVersion starts a daemon that reports version as its own.
func startDaemonVersion(t *testing.T, version string, opts ...func(*daemon.Config)) *testDaemon {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// No test here may send a packet beyond loopback: lookups answer a
	// documentation address and every dial is refused (and counted).
	offline := &noNetwork{}
	cfg := daemon.Config{
		DataDir: dir,
		Public:  &transports.Public{Resolver: offline, Dial: offline.dial},
		LAN:     &transports.LAN{Dial: offline.dial},
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := daemon.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCore(t, d)
	t.Cleanup(func() {
		if n := offline.dials.Load(); n != 0 {
			t.Errorf("the daemon tried %d outbound connections", n)
		}
	})
	tcp, err := api.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	if err := os.WriteFile(filepath.Join(dir, configFile), fmt.Appendf(nil, `{"port": %d}`, port), 0o600); err != nil {
		t.Fatal(err)
	}
	sock, err := api.ListenCtl(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.DepsOf(d), api.Options{Version: version, DrainTimeout: time.Second})
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ctx, tcp, sock); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	stop := sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		d.Close()
	})
	t.Cleanup(stop)
	return &testDaemon{dir: dir, d: d, port: port, stop: stop}
}

// noNetwork is the in-process daemon's resolver and dialer: every name
// resolves to 203.0.113.10 (TEST-NET-3, the one documentation block gate 5
// admits) and every dial is refused, so a request reaches the confirm gate
// and never the network.
type noNetwork struct{ dials atomic.Int64 }

func (*noNetwork) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
}

func (n *noNetwork) dial(context.Context, string, string) (net.Conn, error) {
	n.dials.Add(1)
	return nil, errors.New("no network in tests")
}

// ctlRun runs snugd ctl --data-dir td.dir args… in-process.
func (td *testDaemon) ctl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, stdin, append([]string{"ctl", "--data-dir", td.dir}, args...)...)
}

// pair asks to pair a desktop host and returns the pairing and verifier.
func (td *testDaemon) pair(t *testing.T, name string) (api.PairResponse, string) {
	t.Helper()
	verifier := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{byte(len(name))}, 32))
	sum := sha256.Sum256([]byte(verifier))
	var p api.PairResponse
	if status := td.host(t, http.MethodPost, "/v1/hosts/pair", "", api.PairRequest{Name: name, Surface: "desktop", Challenge: base64.RawURLEncoding.EncodeToString(sum[:])}, &p); status/100 != 2 {
		t.Fatalf("POST /v1/hosts/pair = %d", status)
	}
	return p, verifier
}

// host makes one call over TCP as a host would (with token, unless ""),
// decodes a 2xx answer into out and returns the status.
func (td *testDaemon) host(t *testing.T, method, path, token string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, fmt.Sprintf("http://127.0.0.1:%d%s", td.port, path), body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode the answer: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// TestCtlDaemonDown: with no daemon, every command that needs one exits 1
// with a hint, and creates nothing: no data directory, no socket, no
// config.json.
func TestCtlDaemonDown(t *testing.T) {
	parent := t.TempDir()
	missing := filepath.Join(parent, "never")
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{missing, empty} {
		for _, args := range [][]string{{"status"}, {"status", "--json"}, {"hosts", "list"}, {"connections", "app"}, {"approve", "app", "slot"}, {"doctor"}} {
			code, out, errOut := runCmd(t, "", append([]string{"ctl", "--data-dir", dir}, args...)...)
			if code != exitNo {
				t.Errorf("ctl %q on %s = %d, want %d (stderr %q)", args, dir, code, exitNo, errOut)
			}
			if args[0] != "doctor" && (!strings.Contains(errOut, "snugd is not running") || !strings.Contains(errOut, "hint:")) {
				t.Errorf("ctl %q stderr = %q, want the not-running hint", args, errOut)
			}
			if args[0] != "doctor" && out != "" {
				t.Errorf("ctl %q stdout = %q, want nothing", args, out)
			}
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ctl created the data directory %s: %v", missing, err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("ctl created files in %s: %v", empty, ents)
	}
}

func TestCtlUsage(t *testing.T) {
	tests := []struct {
		args    []string
		code    int
		wantErr string
	}{
		{args: []string{"ctl"}, code: exitUsage, wantErr: "usage: snugd ctl"},
		{args: []string{"ctl", "frobnicate"}, code: exitUsage, wantErr: `unknown command "frobnicate"`},
		{args: []string{"ctl", "--data-dir", "/nonexistent", "approve", "app"}, code: exitUsage, wantErr: "missing SLOT"},
		{args: []string{"ctl", "--data-dir", "/nonexistent", "hosts", "approve"}, code: exitUsage, wantErr: "needs CODE"},
		{args: []string{"ctl", "--data-dir", "/nonexistent", "hosts", "bless", "x"}, code: exitUsage, wantErr: "unknown subcommand"},
		{args: []string{"ctl", "--data-dir", "/nonexistent", "status", "--bogus"}, code: exitUsage, wantErr: "flag provided but not defined"},
		// A credential typed on the command line is refused and not repeated.
		{args: []string{"ctl", "--data-dir", "/nonexistent", "credentials", "set", "app", "slot", "sk_live_abcdef123456"}, code: exitUsage, wantErr: "never taken from the command line"},
		// So is one typed where the values file's name belongs.
		{args: []string{"ctl", "--data-dir", "/nonexistent", "credentials", "set", "app", "slot", "--file", `{"api_key":"sk_live_abcdef123456"}`}, code: exitNo, wantErr: "no such file"},
		{args: []string{"ctl", "template", "render", "--requirement", "testdata/coinbase-exchange.json", "--values", "sk_live_abcdef123456", "--method", "GET", "--url", "https://api.exchange.coinbase.com/accounts"}, code: exitNo, wantErr: "no such file"},
	}
	for _, tc := range tests {
		code, out, errOut := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("%q = %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.wantErr)
		}
		if strings.Contains(errOut+out, "sk_live_abcdef123456") {
			t.Errorf("%q repeated the argument: %q", tc.args, errOut)
		}
	}
	code, out, _ := runCmd(t, "", "ctl", "help")
	if code != exitOK || !strings.Contains(out, "credentials set APP SLOT [--file F]") || !strings.Contains(out, "template render") {
		t.Errorf("ctl help = %d, %q; want every command listed", code, out)
	}
}

// TestCtlStatus: human output and --json with GET /v1/status's schema.
func TestCtlStatus(t *testing.T) {
	td := startDaemon(t)
	code, out, errOut := td.ctl(t, "", "status")
	if code != exitOK || !strings.Contains(out, "data dir     "+td.dir) || !strings.Contains(out, "policy       desktop") {
		t.Errorf("ctl status = %d, %q (stderr %q)", code, out, errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("ctl status warned with equal versions: %q", errOut)
	}
	code, out, _ = td.ctl(t, "", "status", "--json")
	var st api.StatusResponse
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.DataDir != td.dir || st.Listen != fmt.Sprintf("127.0.0.1:%d", td.port) {
		t.Errorf("ctl status --json = %d, %q", code, out)
	}
}

// TestCtlHosts pairs a host through the ctl channel: the code shows in
// hosts list, hosts approve releases the token to the verifier's holder,
// and hosts revoke unpairs it.
func TestCtlHosts(t *testing.T) {
	td := startDaemon(t)
	p, verifier := td.pair(t, "Test Desktop")
	code, out, _ := td.ctl(t, "", "hosts", "list")
	if code != exitOK || !strings.Contains(out, p.Code) || !strings.Contains(out, "no paired hosts") {
		t.Errorf("hosts list = %d, %q; want the pending code", code, out)
	}
	code, out, errOut := td.ctl(t, "", "hosts", "approve", p.Code, "--yes")
	if code != exitOK || !strings.Contains(out, "approved") {
		t.Fatalf("hosts approve = %d, %q (stderr %q)", code, out, errOut)
	}
	var r api.RedeemResponse
	if status := td.host(t, http.MethodPost, "/v1/hosts/pair/"+p.PairingID+"/redeem", "", api.RedeemRequest{Verifier: verifier}, &r); status/100 != 2 || r.State != "approved" || r.Token == "" {
		t.Fatalf("Redeem = %d, %+v", status, r)
	}
	code, out, _ = td.ctl(t, "", "hosts", "--json")
	var hs api.HostsResponse
	if code != exitOK || json.Unmarshal([]byte(out), &hs) != nil || len(hs.Hosts) != 1 || len(hs.Pending) != 0 {
		t.Fatalf("hosts --json = %d, %q", code, out)
	}
	if strings.Contains(out, r.Token) {
		t.Errorf("hosts --json shows the host token")
	}
	code, _, errOut = td.ctl(t, "", "hosts", "approve", p.Code, "--yes")
	if code != exitNo || errOut == "" {
		t.Errorf("second approve = %d, %q; want 1 with the refusal", code, errOut)
	}
	// --json prints what POST /v1/hosts/deny answers, as every command does.
	p3, _ := td.pair(t, "Another Desktop")
	code, out, _ = td.ctl(t, "", "hosts", "deny", p3.Code, "--json")
	var dr api.DecisionResponse
	if code != exitOK || json.Unmarshal([]byte(out), &dr) != nil || dr.Pairing.PairingID != p3.PairingID || dr.Pairing.State != "denied" {
		t.Errorf("hosts deny --json = %d, %q; want {\"pairing\": …} denied", code, out)
	}
	if code, _, errOut = td.ctl(t, "", "hosts", "revoke", hs.Hosts[0].HostID); code != exitOK {
		t.Fatalf("hosts revoke = %d (stderr %q)", code, errOut)
	}
	if status := td.host(t, http.MethodGet, "/v1/status", r.Token, nil, nil); status/100 == 2 {
		t.Errorf("GET /v1/status with a revoked host's token = %d, want a refusal", status)
	}
	p2, _ := td.pair(t, "Other")
	if code, out, _ = td.ctl(t, "", "hosts", "deny", p2.Code); code != exitOK || !strings.Contains(out, "denied") {
		t.Errorf("hosts deny = %d, %q", code, out)
	}
}

// TestCtlDoctor runs doctor against a healthy daemon: every check passes,
// including the self-test that the API refuses a foreign Host and an
// unpaired Origin, and nothing it prints is a credential.
func TestCtlDoctor(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	values := `{"api_key":"` + cbKey + `","api_secret":"` + cbSecret() + `","passphrase":"` + cbPassphrase + `"}`
	if code, _, errOut := td.ctl(t, values, "credentials", "set", "trader", "coinbase-exchange"); code != exitOK {
		t.Fatalf("credentials set: %q", errOut)
	}
	code, out, errOut := td.ctl(t, "", "doctor")
	for _, secret := range []string{cbKey, cbSecret(), cbPassphrase} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("doctor prints a credential")
		}
	}
	if code != exitOK {
		t.Fatalf("doctor = %d\n%s\nstderr %q", code, out, errOut)
	}
	for _, want := range []string{"OK    data directory", "OK    snugd.db ", "OK    daemon", "OK    lock", "OK    database", "OK    disk", "OK    port", "OK    host/origin", "OK    clock"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = td.ctl(t, "", "doctor", "--json")
	var rep doctorReport
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK {
		t.Errorf("doctor --json = %d, %q", code, out)
	}

	// A database others can read is a failure.
	if err := os.Chmod(filepath.Join(td.dir, dbFileName), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = td.ctl(t, "", "doctor")
	if code != exitNo || !strings.Contains(out, "FAIL  snugd.db") {
		t.Errorf("doctor with a 0644 database = %d:\n%s", code, out)
	}
}

// TestCtlDoctorStopped runs doctor on the data directory of a stopped
// daemon: it reports the daemon down (exit 1), still checks the files and
// the database, and creates nothing (the database is opened immutable, so
// not even a -shm file appears).
func TestCtlDoctorStopped(t *testing.T) {
	td := startDaemon(t)
	td.stop()
	before := dirNames(t, td.dir)
	code, out, _ := td.ctl(t, "", "doctor")
	if code != exitNo || !strings.Contains(out, "FAIL  daemon") || !strings.Contains(out, "OK    database") || !strings.Contains(out, "SKIP  port") {
		t.Errorf("doctor on a stopped daemon = %d:\n%s", code, out)
	}
	if after := dirNames(t, td.dir); !slices.Equal(before, after) {
		t.Errorf("doctor changed the data directory: %v, then %v", before, after)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// propose writes testdata's Coinbase Exchange requirement to app's
// "coinbase-exchange" slot through the user channel.
func (td *testDaemon) propose(t *testing.T, app string) {
	t.Helper()
	raw, err := os.ReadFile("testdata/coinbase-exchange.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := td.d.Proposers().ProposeUser(t.Context(), app, "coinbase-exchange", raw); err != nil {
		t.Fatalf("ProposeUser: %v", err)
	}
}

// TestCtlConnectionWriters drives a connection through ctl: listed as
// declared, approved (hosts frozen), credentials stored from stdin and
// never shown, revoked (credentials wiped), reconnected with the
// revocation disclosed.
// conformance: P3-C12.3-08, P3-C12.3-17
func TestCtlConnectionWriters(t *testing.T) {
	td := startDaemon(t)
	const app = "trader"
	td.propose(t, app)
	code, out, _ := td.ctl(t, "", "connections", app)
	if code != exitOK || !strings.Contains(out, "coinbase-exchange  declared  Coinbase Exchange (api_key)") || !strings.Contains(out, "snugd ctl review trader coinbase-exchange") {
		t.Errorf("connections = %d:\n%s", code, out)
	}
	code, out, errOut := td.ctl(t, "", "approve", app, "coinbase-exchange", "--yes")
	if code != exitOK || !strings.Contains(out, "api.exchange.coinbase.com") {
		t.Fatalf("approve = %d, %q (stderr %q)", code, out, errOut)
	}
	// A second approval is a writer refusing a transition: exit 1.
	if code, _, errOut = td.ctl(t, "", "approve", app, "coinbase-exchange", "--yes"); code != exitNo || errOut == "" {
		t.Errorf("second approve = %d, %q; want 1 with the refusal", code, errOut)
	}

	values := `{"api_key":"` + cbKey + `","api_secret":"` + cbSecret() + `","passphrase":"` + cbPassphrase + `"}`
	code, out, errOut = td.ctl(t, values, "credentials", "set", app, "coinbase-exchange")
	if code != exitOK || !strings.Contains(out, "stored 3 values") {
		t.Fatalf("credentials set = %d, %q (stderr %q)", code, out, errOut)
	}
	open := writeFile(t, t.TempDir(), "v.json", values, 0o640)
	if code, _, errOut = td.ctl(t, "", "credentials", "set", app, "coinbase-exchange", "--file", open); code != exitNo || !strings.Contains(errOut, "readable by group or others") {
		t.Errorf("credentials set --file 0640 = %d, %q", code, errOut)
	}
	private := writeFile(t, t.TempDir(), "v.json", values, 0o600)
	if code, _, errOut = td.ctl(t, "", "credentials", "set", app, "coinbase-exchange", "--file", private); code != exitOK {
		t.Errorf("credentials set --file 0600 = %d, %q", code, errOut)
	}
	if code, _, errOut = td.ctl(t, `{"nope":"x"}`, "credentials", "set", app, "coinbase-exchange"); code != exitNo || strings.Contains(errOut, "x\"") {
		t.Errorf("credentials set with an undeclared key = %d, %q", code, errOut)
	}
	code, out, _ = td.ctl(t, "", "connections", app, "--json")
	var list struct {
		Connections []api.ConnectionJSON `json:"connections"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Connections) != 1 || list.Connections[0].Status != "approved" {
		t.Fatalf("connections --json = %d, %q", code, out)
	}
	for _, secret := range []string{cbKey, cbSecret(), cbPassphrase} {
		if strings.Contains(out, secret) {
			t.Errorf("connections --json shows a credential")
		}
	}

	if code, out, _ = td.ctl(t, "", "revoke", app, "coinbase-exchange"); code != exitOK || !strings.Contains(out, "wiped") {
		t.Errorf("revoke = %d, %q", code, out)
	}
	if _, ok, err := td.d.Grants().ConnectionState(t.Context(), app, "coinbase-exchange"); err != nil || ok {
		t.Errorf("ConnectionState after revoke = %v, %v; want the slice wiped", ok, err)
	}
	if code, out, _ = td.ctl(t, "", "reconnect", app, "coinbase-exchange"); code != exitOK || !strings.Contains(out, "declared again (revoked 20") {
		t.Errorf("reconnect = %d, %q", code, out)
	}
	if code, out, _ = td.ctl(t, "", "connections", app); code != exitOK || !strings.Contains(out, "revoked      20") {
		t.Errorf("connections after reconnect = %d:\n%s", code, out)
	}
}

// TestCtlReview shows what approving means: hosts, the numbered plain-text
// instructions, the console URL with its host, and the next step.
// conformance: P3-C12.7-01, P3-C12.7-04
func TestCtlReview(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	code, out, errOut := td.ctl(t, "", "review", "trader", "coinbase-exchange")
	if code != exitOK {
		t.Fatalf("review = %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"trader/coinbase-exchange: Coinbase Exchange (api_key), declared",
		"proposed by  user (entered on this device)",
		"may reach    api.exchange.coinbase.com",
		"console      https://exchange.coinbase.com/profile/api (host: exchange.coinbase.com)",
		"  1. Sign in to Coinbase Exchange and open Settings, then API.",
		"  5. Paste the key, the secret and the passphrase here.",
		"to approve: snugd ctl approve trader coinbase-exchange",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("review output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = td.ctl(t, "", "review", "trader", "coinbase-exchange", "--json")
	var rv api.ReviewResponse
	if code != exitOK || json.Unmarshal([]byte(out), &rv) != nil || len(rv.Instructions) != 5 {
		t.Errorf("review --json = %d, %q", code, out)
	}
	if code, _, errOut = td.ctl(t, "", "review", "trader", "nope"); code != exitNo || errOut == "" {
		t.Errorf("review of a missing slot = %d, %q", code, errOut)
	}
}

// TestCtlConfirms parks a POST on the confirm gate, lists it through ctl
// and denies it: the request ends NET_CONFIRM_DENIED without a network
// call (the deny comes before any credential is read or host dialled).
// conformance: P3-X14-25, P3-X14-27
func TestCtlConfirms(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	if code, _, errOut := td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes"); code != exitOK {
		t.Fatalf("approve: %q", errOut)
	}
	code, out, _ := td.ctl(t, "", "confirms")
	if code != exitOK || !strings.Contains(out, "no pending confirms") {
		t.Errorf("confirms with none = %d, %q", code, out)
	}
	frame := `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://api.exchange.coinbase.com/orders","method":"POST","body":"{\"size\":\"1\"}"}`
	done := make(chan fetch.NetResult, 1)
	go func() {
		done <- td.d.Fetch().Net(context.Background(), fetch.NetCall{AppID: "trader", Frame: []byte(frame), Delivery: fetch.DeliveryApp})
	}()
	var list struct {
		Confirms []api.ConfirmJSON `json:"confirms"`
	}
	for i := 0; i < 200 && len(list.Confirms) == 0; i++ { // 2 seconds at most
		time.Sleep(10 * time.Millisecond)
		code, out, _ = td.ctl(t, "", "confirms", "--json")
		if code != exitOK || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("confirms --json = %d, %q", code, out)
		}
	}
	if len(list.Confirms) != 1 {
		t.Fatalf("confirms --json = %q, want the parked POST", out)
	}
	cf := list.Confirms[0]
	code, out, _ = td.ctl(t, "", "confirms")
	for _, want := range []string{"confirm " + cf.ID, "request  POST https://api.exchange.coinbase.com/orders", "host     api.exchange.coinbase.com", "for      trader/coinbase-exchange", "body     {\n", `"size": "1"`} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("confirms output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := td.ctl(t, "", "confirms", "deny", cf.ID, "--session"); code != exitUsage {
		t.Errorf("confirms deny --session = %d, %q; want a usage error", code, errOut)
	}
	if code, out, errOut := td.ctl(t, "", "confirms", "deny", cf.ID); code != exitOK || !strings.Contains(out, "deny") {
		t.Fatalf("confirms deny = %d, %q, %q", code, out, errOut)
	}
	select {
	case r := <-done:
		if r.Code != "NET_CONFIRM_DENIED" {
			t.Errorf("denied POST answered %q, want NET_CONFIRM_DENIED", r.Code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the denied POST did not return")
	}
	// Deciding a decided confirm is a no-op or a refusal, never an allow.
	code, _, _ = td.ctl(t, "", "confirms", "allow", cf.ID)
	if code == exitUsage {
		t.Errorf("confirms allow of a decided id = usage error")
	}
}

// TestCtlExportImport exports the user DB without secrets and imports it
// back: the identical approved row is restored.
// conformance: P3-C13-06
func TestCtlExportImport(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	values := `{"api_key":"` + cbKey + `","api_secret":"` + cbSecret() + `","passphrase":"` + cbPassphrase + `"}`
	if code, _, errOut := td.ctl(t, values, "credentials", "set", "trader", "coinbase-exchange"); code != exitOK {
		t.Fatalf("credentials set: %q", errOut)
	}
	file := filepath.Join(t.TempDir(), "export.db")
	code, out, errOut := td.ctl(t, "", "export", file)
	if code != exitOK || !strings.Contains(out, "exported to") {
		t.Fatalf("export = %d, %q, %q", code, out, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(data, []byte("SQLite format 3\x00")) {
		t.Fatalf("export wrote %d bytes, %v; want an SQLite file", len(data), err)
	}
	for _, secret := range []string{cbKey, cbSecret(), cbPassphrase} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the export carries a credential")
		}
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("export mode = %04o, want 0600", fi.Mode().Perm())
	}
	if code, _, _ := td.ctl(t, "", "export", file); code != exitNo {
		t.Errorf("export over an existing file = %d, want 1", code)
	}
	code, out, errOut = td.ctl(t, "", "import", file)
	if code != exitOK || !strings.Contains(out, "1 restored, 0 demoted") {
		t.Errorf("import = %d, %q, %q", code, out, errOut)
	}
	code, out, _ = td.ctl(t, "", "import", file, "--json")
	var rep api.ImportReportJSON
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Restored != 1 {
		t.Errorf("import --json = %d, %q", code, out)
	}
	if code, _, errOut = td.ctl(t, "", "import", filepath.Join(t.TempDir(), "none.db")); code != exitNo || !strings.Contains(errOut, "does not exist") {
		t.Errorf("import of a missing file = %d, %q", code, errOut)
	}
}

// TestCtlVersionMismatch: a daemon of another version answers, and ctl
// warns on stderr (Snugd-Version) while still doing the job.
func TestCtlVersionMismatch(t *testing.T) {
	td := startDaemonVersion(t, "0.0.1-other")
	code, out, errOut := td.ctl(t, "", "status", "--json")
	if code != exitOK || !strings.Contains(errOut, "warning: snugd ctl is version "+buildVersion()+" but the daemon is 0.0.1-other") {
		t.Errorf("status against another version = %d, stderr %q", code, errOut)
	}
	if strings.Contains(out, "warning") {
		t.Errorf("the warning went to stdout, which --json keeps for JSON: %q", out)
	}
}

// follow runs a following ctl command (confirms --watch, journal --follow)
// until stop is called, which returns its exit status.
func (td *testDaemon) follow(t *testing.T, out *testutil.LogBuffer, args ...string) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var errb testutil.LogBuffer
	e := env{stdin: strings.NewReader(""), stdout: out, stderr: &errb, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- dispatch(ctx, e, append([]string{"ctl", "--data-dir", td.dir}, args...)) }()
	return func() int {
		cancel()
		select {
		case code := <-done:
			if errb.String() != "" {
				t.Logf("stderr: %s", errb.String())
			}
			return code
		case <-time.After(10 * time.Second):
			t.Fatalf("ctl %q did not stop when interrupted", args)
			return -1
		}
	}
}

// waitFor waits (at most 5 s) until out contains want.
func waitFor(t *testing.T, out *testutil.LogBuffer, want string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if strings.Contains(out.String(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("output never showed %q:\n%s", want, out.String())
}

// TestCtlFollow: confirms --watch shows a confirm parked after it started
// (from the event stream), and journal --follow shows the decision's entry;
// both end with exit 0 when interrupted.
func TestCtlFollow(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	var watch, journal testutil.LogBuffer
	stopWatch := td.follow(t, &watch, "confirms", "--watch")
	stopJournal := td.follow(t, &journal, "journal", "--follow")

	frame := `{"type":"snug:net-request","v":1,"requestId":"r2","instanceId":"i1","url":"https://api.exchange.coinbase.com/orders/7","method":"DELETE"}`
	done := make(chan fetch.NetResult, 1)
	go func() {
		done <- td.d.Fetch().Net(context.Background(), fetch.NetCall{AppID: "trader", Frame: []byte(frame), Delivery: fetch.DeliveryApp})
	}()
	waitFor(t, &watch, "DELETE https://api.exchange.coinbase.com/orders/7")
	id := strings.Fields(watch.String())[1] // "confirm ID"
	if code, _, errOut := td.ctl(t, "", "confirms", "deny", id); code != exitOK {
		t.Fatalf("confirms deny = %d, %q", code, errOut)
	}
	<-done
	waitFor(t, &journal, "NET_CONFIRM_DENIED at the confirmation; denied by the user")
	if code := stopWatch(); code != exitOK {
		t.Errorf("confirms --watch ended %d, want 0", code)
	}
	if code := stopJournal(); code != exitOK {
		t.Errorf("journal --follow ended %d, want 0", code)
	}
}

// runCore runs d until the test ends, as run does beside the API
// server.
func runCore(t testing.TB, d *daemon.Daemon) { testutil.RunUntilCleanup(t, d.Run) }
