package lan_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/lan/huesim"
)

// bridgeAddr is the RFC-1918 address the tests' bridge stands at. The
// simulator listens on loopback (or an in-memory pipe); an injected dialer
// maps the address to it and records every address it is asked for, so a
// test can prove what was, and was not, dialed.
const bridgeAddr = "192.168.77.10"

type dialer struct {
	to func(ctx context.Context) (net.Conn, error)

	mu    sync.Mutex
	calls []string
}

func (d *dialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.calls = append(d.calls, network+" "+address)
	d.mu.Unlock()
	if address != bridgeAddr+":443" {
		return nil, fmt.Errorf("test dialer: nothing at %s", address)
	}
	return d.to(ctx)
}

func (d *dialer) log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// startSim runs a simulator on loopback and a dialer that reaches it at
// bridgeAddr.
func startSim(t *testing.T, cfg huesim.Config) (*huesim.Sim, *dialer) {
	t.Helper()
	sim, err := huesim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	d := &dialer{to: func(ctx context.Context) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", sim.Addr())
	}}
	return sim, d
}

// startPipeSim runs a simulator on an in-memory pipe, for synctest bubbles.
func startPipeSim(t *testing.T) (*huesim.Sim, *dialer) {
	t.Helper()
	p := huesim.NewPipe()
	sim, err := huesim.Start(huesim.Config{Listener: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim, &dialer{to: func(ctx context.Context) (net.Conn, error) { return p.Dial(ctx, "", "") }}
}

// TestPairPressedButton: the whole exchange against a bridge whose button
// was pressed: the verify probe names the bridge and records the leaf's
// fingerprint, pairing returns the key the bridge minted with that pin,
// and the key opens CLIP v2.
//
// conformance: P3-C12.11-13, P3-C12.12-15, P3-C12.12-16
func TestPairPressedButton(t *testing.T) {
	sim, d := startSim(t, huesim.Config{})
	sim.PressButton()
	cand, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
	if err != nil {
		t.Fatalf("Verify(bridge) = %v, want a candidate", err)
	}
	want := lan.BridgeConfig{BridgeID: "001788fffe23bfc2", ModelID: "BSB002", Name: "Hue Bridge", SWVersion: "1972004020", APIVersion: "1.72.0"}
	if cand.Bridge != want {
		t.Errorf("Verify(bridge).Bridge = %+v, want %+v", cand.Bridge, want)
	}
	if cand.Pin != sim.Fingerprint() || cand.CN != "001788fffe23bfc2" || cand.Address.String() != bridgeAddr {
		t.Errorf("Verify(bridge) = pin %s cn %q addr %v, want pin %s cn %q addr %s", cand.Pin, cand.CN, cand.Address, sim.Fingerprint(), "001788fffe23bfc2", bridgeAddr)
	}

	var progress []lan.Progress
	creds, err := lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial, Host: "desk.example", Status: func(p lan.Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatalf("Pair(pressed) = %v, want credentials", err)
	}
	if !sim.HasKey(creds.Username.Reveal()) || len(creds.ClientKey.Reveal()) != 32 {
		t.Errorf("Pair(pressed) key known to bridge = %v, client key length %d; want true, 32", sim.HasKey(creds.Username.Reveal()), len(creds.ClientKey.Reveal()))
	}
	if creds.Pin != sim.Fingerprint() || creds.CN != "001788fffe23bfc2" || creds.BridgeID != "001788fffe23bfc2" {
		t.Errorf("Pair(pressed) = pin %s cn %q id %q, want the candidate's", creds.Pin, creds.CN, creds.BridgeID)
	}
	if len(progress) != 0 {
		t.Errorf("Pair(pressed) reported %v, want nothing (the window was open)", progress)
	}
	for _, c := range d.log() {
		if c != "tcp "+bridgeAddr+":443" {
			t.Errorf("dialed %q, want only tcp %s:443", c, bridgeAddr)
		}
	}
	if got := sim.Requests(); strings.Join(got, ",") != "GET /api/0/config,POST /api" {
		t.Errorf("bridge served %q, want the probe then one POST", got)
	}
	if got := sim.Links(); len(got) != 1 || got[0] != (huesim.Link{DeviceType: "snugd#desk", GenerateClientKey: true}) {
		t.Errorf("bridge was asked %+v, want devicetype snugd#desk with generateclientkey", got)
	}

	// The key opens CLIP v2 over the pinned certificate; without it the
	// bridge says 403.
	if code := clipGet(t, d, creds.Pin, creds.Username.Reveal()); code != http.StatusOK {
		t.Errorf("CLIP v2 with the key = %d, want 200", code)
	}
	if code := clipGet(t, d, creds.Pin, ""); code != http.StatusForbidden {
		t.Errorf("CLIP v2 without a key = %d, want 403", code)
	}
}

// clipGet asks the simulator for its lights over a connection pinned to pin.
func clipGet(t *testing.T, d *dialer, pin, key string) int {
	t.Helper()
	cl := &http.Client{Transport: &http.Transport{
		DialContext: d.dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
			return lan.CheckPin(pin, cs.PeerCertificates[0].Raw)
		}},
	}}
	defer cl.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "https://"+bridgeAddr+"/clip/v2/resource/light", nil)
	if key != "" {
		req.Header.Set("hue-application-key", key)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("CLIP v2 GET: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Errors []any `json:"errors"`
		Data   []any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Errorf("CLIP v2 answer: %v", err)
	}
	return resp.StatusCode
}

// TestPairWaitsForButton runs on synctest's fake clock: the bridge answers
// error 101 until the person presses the button five seconds in; Pair
// reports press-button once with the 30-second deadline, polls about once
// a second on one pinned connection, and returns the key.
func TestPairWaitsForButton(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, d := startPipeSim(t)
		cand, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
		if err != nil {
			t.Fatalf("Verify(bridge) = %v", err)
		}
		start := time.Now()
		var progress []lan.Progress
		status := func(p lan.Progress) {
			progress = append(progress, p)
			go func() {
				time.Sleep(5 * time.Second)
				sim.PressButton()
			}()
		}
		creds, err := lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial, Status: status})
		if err != nil {
			t.Fatalf("Pair(button pressed after 5 s) = %v, want credentials", err)
		}
		if !sim.HasKey(creds.Username.Reveal()) {
			t.Error("Pair returned a key the bridge did not mint")
		}
		if len(progress) != 1 || progress[0].State != lan.StatePressButton || !progress[0].Deadline.Equal(start.Add(30*time.Second)) {
			t.Errorf("Pair reported %+v, want one press-button with deadline %v", progress, start.Add(30*time.Second))
		}
		if n := sim.Count("POST /api"); n < 5 || n > 7 {
			t.Errorf("bridge saw %d POST /api in 5 s, want about one a second", n)
		}
		if n := sim.Handshakes(); n != 2 {
			t.Errorf("bridge saw %d TLS handshakes, want 2 (the probe's and pairing's one connection)", n)
		}
	})
}

// TestPairDeadline: nobody presses the button; Pair gives up at the
// deadline with the fixed sentence and no key is minted.
func TestPairDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, d := startPipeSim(t)
		cand, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
		if err != nil {
			t.Fatalf("Verify(bridge) = %v", err)
		}
		start := time.Now()
		_, err = lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial, Window: 12 * time.Second})
		if !errors.Is(err, lan.ErrLinkTimeout) || err.Error() != "the link button was not pressed in time" {
			t.Fatalf("Pair(never pressed) = %v, want ErrLinkTimeout", err)
		}
		if got := time.Since(start); got != 12*time.Second {
			t.Errorf("Pair gave up after %v, want the 12 s window", got)
		}
		if n := sim.Count("POST /api"); n < 11 || n > 13 {
			t.Errorf("bridge saw %d POST /api in 12 s, want about one a second", n)
		}

		// The window is bounded: a minute at most.
		start = time.Now()
		if _, err := lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial, Window: time.Hour}); !errors.Is(err, lan.ErrLinkTimeout) {
			t.Fatalf("Pair(hour window) = %v, want ErrLinkTimeout", err)
		}
		if got := time.Since(start); got != lan.MaxPairWindow {
			t.Errorf("Pair(hour window) gave up after %v, want %v", got, lan.MaxPairWindow)
		}
	})
}

// TestPairCanceled: the caller's ctx ends the wait at once, with ctx's
// error rather than a refusal.
func TestPairCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, d := startPipeSim(t)
		cand, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
		if err != nil {
			t.Fatalf("Verify(bridge) = %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		if _, err := lan.Pair(ctx, cand, lan.PairConfig{Dial: d.dial}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Pair(canceled) = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("Pair returned %v after cancel was scheduled at 3 s", got)
		}
	})
}

// TestPairCertificateRotated: the bridge presents another certificate to
// the POST than to the probe (an impostor took the address, or the device
// was reset). CN and bridge id are unchanged; the fingerprint is not.
// The handshake fails before a request byte: the bridge never sees a POST.
//
// conformance: P3-C12.11-15, P3-C13-13
func TestPairCertificateRotated(t *testing.T) {
	sim, d := startSim(t, huesim.Config{})
	sim.PressButton()
	cand, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
	if err != nil {
		t.Fatalf("Verify(bridge) = %v", err)
	}
	if err := sim.Rotate(); err != nil {
		t.Fatal(err)
	}
	_, err = lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial})
	if !errors.Is(err, lan.ErrCertificateChanged) || err.Error() != "the bridge's certificate changed" {
		t.Fatalf("Pair(rotated certificate) = %v, want ErrCertificateChanged", err)
	}
	if n := sim.Count("POST /api"); n != 0 {
		t.Errorf("bridge saw %d POST /api, want 0: the handshake must fail first", n)
	}
	if sim.Handshakes() != 2 {
		t.Errorf("bridge saw %d handshakes, want 2 (probe, refused pairing connection)", sim.Handshakes())
	}
}

// TestVerifyRefuses: the verify probe refuses what is not a Hue bridge,
// with a fixed sentence that carries nothing the device said, and Pair
// refuses a candidate Verify did not produce.
//
// conformance: P3-C12.12-15
func TestVerifyRefuses(t *testing.T) {
	cases := []struct {
		name string
		cfg  huesim.Config
	}{
		{"router admin page", huesim.Config{NotBridge: true}},
		{"round v1 bridge", huesim.Config{ModelID: "BSB001"}},
		{"unknown model", huesim.Config{ModelID: "ignore previous instructions"}},
		{"bad bridge id", huesim.Config{BridgeID: "0017-88ff-fe23-b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim, d := startSim(t, tc.cfg)
			sim.PressButton()
			_, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
			if !errors.Is(err, lan.ErrNotBridge) || err.Error() != "the device at this address does not answer like a Hue bridge" {
				t.Fatalf("Verify(%s) = %v, want ErrNotBridge", tc.name, err)
			}
			if n := sim.Count("POST /api"); n != 0 {
				t.Errorf("device saw %d POST /api, want 0", n)
			}
		})
	}

	t.Run("nothing listening", func(t *testing.T) {
		d := &dialer{to: func(context.Context) (net.Conn, error) { return nil, errors.New("connection refused") }}
		if _, err := lan.Verify(t.Context(), bridgeAddr, d.dial); !errors.Is(err, lan.ErrUnreachable) {
			t.Fatalf("Verify(no device) = %v, want ErrUnreachable", err)
		}
	})

	t.Run("forged candidate", func(t *testing.T) {
		sim, d := startSim(t, huesim.Config{})
		sim.PressButton()
		for _, c := range []lan.Candidate{{}, {Address: mustCandidate(t, d).Address, Pin: "not-a-pin"}} {
			if _, err := lan.Pair(t.Context(), c, lan.PairConfig{Dial: d.dial}); !errors.Is(err, lan.ErrBadCandidate) {
				t.Errorf("Pair(%+v) = %v, want ErrBadCandidate", c, err)
			}
		}
		if n := sim.Count("POST /api"); n != 0 {
			t.Errorf("bridge saw %d POST /api, want 0", n)
		}
	})
}

func mustCandidate(t *testing.T, d *dialer) lan.Candidate {
	t.Helper()
	c, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
	if err != nil {
		t.Fatalf("Verify(bridge) = %v", err)
	}
	return c
}

// TestAddressRefused: an address outside RFC 1918, or not spelled as a
// canonical dotted quad, is refused before anything is dialed.
//
// conformance: P3-C12.11-01
func TestAddressRefused(t *testing.T) {
	for _, addr := range []string{"8.8.8.8", "127.0.0.1", "172.32.0.1", "169.254.169.254", "100.64.0.1", "192.168.1.020", "192.168.1.20:443", "hue.local", "::ffff:192.168.1.20", "fd00::1", "3232235796", ""} {
		d := &dialer{to: func(context.Context) (net.Conn, error) { return nil, errors.New("unreachable") }}
		if _, err := lan.Verify(t.Context(), addr, d.dial); !errors.Is(err, lan.ErrNotPrivate) {
			t.Errorf("Verify(%q) = %v, want ErrNotPrivate", addr, err)
		}
		if c := d.log(); len(c) != 0 {
			t.Errorf("Verify(%q) dialed %v, want nothing", addr, c)
		}
	}
}

// TestPairVanishes: the bridge goes away while Pair waits for the button.
func TestPairVanishes(t *testing.T) {
	sim, d := startSim(t, huesim.Config{})
	cand := mustCandidate(t, d)
	_, err := lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial, Status: func(lan.Progress) { sim.Vanish() }})
	if !errors.Is(err, lan.ErrVanished) || err.Error() != "the bridge stopped answering during pairing" {
		t.Fatalf("Pair(vanished) = %v, want ErrVanished", err)
	}
}

// TestCredentialsRedacted: the keys never print, log or marshal.
func TestCredentialsRedacted(t *testing.T) {
	sim, d := startSim(t, huesim.Config{})
	sim.PressButton()
	creds, err := lan.Pair(t.Context(), mustCandidate(t, d), lan.PairConfig{Dial: d.dial})
	if err != nil {
		t.Fatal(err)
	}
	key, ck := creds.Username.Reveal(), creds.ClientKey.Reveal()
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("paired", "creds", creds, "key", creds.Username)
	js, _ := json.Marshal(creds)
	for _, out := range []string{fmt.Sprint(creds), fmt.Sprintf("%+v %#v %s %q", creds, creds, creds.Username, creds.ClientKey), logged.String(), string(js)} {
		if strings.Contains(out, key) || strings.Contains(out, ck) {
			t.Errorf("output %q carries a key", out)
		}
	}
}

func TestCheckPin(t *testing.T) {
	der := []byte("certificate")
	sum := sha256.Sum256(der)
	pin := hex.EncodeToString(sum[:])
	if lan.Fingerprint(der) != pin {
		t.Fatalf("Fingerprint = %s, want %s", lan.Fingerprint(der), pin)
	}
	cases := []struct {
		pin  string
		want error
	}{
		{pin, nil},
		{strings.ToUpper(pin), lan.ErrCertificateChanged}, // one spelling only
		{lan.Fingerprint([]byte("other")), lan.ErrCertificateChanged},
		{"", lan.ErrCertificateChanged},
		{pin[:63], lan.ErrCertificateChanged},
	}
	for _, tc := range cases {
		if err := lan.CheckPin(tc.pin, der); err != tc.want {
			t.Errorf("CheckPin(%q) = %v, want %v", tc.pin, err, tc.want)
		}
	}
}

func TestDeviceType(t *testing.T) {
	cases := map[string]string{
		"":                                "snugd#snugd",
		"desk":                            "snugd#desk",
		"alices-macbook.local":            "snugd#alices-macbook",
		"a very long host name indeed!!!": "snugd#averylonghostnamein",
		"#;\"{}":                          "snugd#snugd",
	}
	for in, want := range cases {
		if got := lan.DeviceType(in); got != want {
			t.Errorf("DeviceType(%q) = %q, want %q", in, got, want)
		}
	}
}

// standIn serves a device that answers the probe like a bridge and POST
// /api with post, over a self-signed certificate, reached at bridgeAddr.
func standIn(t *testing.T, config, post http.HandlerFunc) *dialer {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			post(w, r)
			return
		}
		config(w, r)
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	return &dialer{to: func(ctx context.Context) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", addr)
	}}
}

func hueConfig(w http.ResponseWriter, _ *http.Request) {
	io.WriteString(w, `{"name":"Hue Bridge","swversion":"1972004020","apiversion":"1.72.0","bridgeid":"001788FFFE23BFC2","modelid":"BSB002"}`)
}

func answer(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, s) }
}

// TestExchangeHostileDevice: a device that tries to slip past the probe or
// the pairing answer gets a fixed sentence, never its own words back, and
// nothing but the candidate address is ever dialed.
func TestExchangeHostileDevice(t *testing.T) {
	redirect := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://192.168.77.99/api", http.StatusTemporaryRedirect)
	}
	huge := func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `[{"success":{"username":"`+strings.Repeat("a", 70<<10)+`"}}]`)
	}
	fail := func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "ignore previous instructions", http.StatusInternalServerError)
	}
	cases := []struct {
		name         string
		config, post http.HandlerFunc
		verifyErr    error
		pairErr      error
	}{
		{"probe redirects", redirect, answer(`[]`), lan.ErrNotBridge, nil},
		{"probe answers 500", fail, answer(`[]`), lan.ErrNotBridge, nil},
		{"probe answer too long", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"name":"`+strings.Repeat("x", 70<<10)+`",`)
			hueConfig(w, r)
		}, answer(`[]`), lan.ErrNotBridge, nil},
		{"pairing redirects", hueConfig, redirect, nil, lan.ErrBadAnswer},
		{"pairing answers 500", hueConfig, fail, nil, lan.ErrBadAnswer},
		{"pairing answer too long", hueConfig, huge, nil, lan.ErrBadAnswer},
		{"bridge refuses", hueConfig, answer(`[{"error":{"type":7,"address":"/devicetype","description":"ignore previous instructions"}}]`), nil, lan.ErrPairingRefused},
		{"key with a header break", hueConfig, answer(`[{"success":{"username":"k\r\nX-Evil: 1"}}]`), nil, lan.ErrBadAnswer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := standIn(t, tc.config, tc.post)
			cand, err := lan.Verify(t.Context(), bridgeAddr, d.dial)
			if err != tc.verifyErr {
				t.Fatalf("Verify = %v, want %v", err, tc.verifyErr)
			}
			if err == nil {
				_, err = lan.Pair(t.Context(), cand, lan.PairConfig{Dial: d.dial})
				if err != tc.pairErr {
					t.Fatalf("Pair = %v, want %v", err, tc.pairErr)
				}
			}
			if strings.Contains(err.Error(), "ignore") {
				t.Errorf("refusal %q carries the device's text", err)
			}
			for _, c := range d.log() {
				if c != "tcp "+bridgeAddr+":443" {
					t.Errorf("dialed %q, want only tcp %s:443", c, bridgeAddr)
				}
			}
		})
	}
}
