package transports_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
)

// activity counts what an upstream saw: connections that carried a request
// byte (StateActive) and handler calls.
type activity struct {
	active, handled atomic.Int32
}

func (a *activity) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.handled.Add(1)
		w.Write([]byte("device"))
	})
}

func (a *activity) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateActive {
		a.active.Add(1)
	}
}

// TestLANPin: a request to the device presenting the pinned certificate is
// served; the pin is the SHA-256 of the leaf DER.
//
// conformance: P3-C12.11-14
func TestLANPin(t *testing.T) {
	var act activity
	cert := deviceCert(t, "bridge-001788fffe123456")
	srv := deviceUpstream(t, act.handler(), cert, nil)
	l, d := lanTo(t, srv, "192.168.1.20:443")
	sum := sha256.Sum256(cert.Certificate[0])
	pin := hex.EncodeToString(sum[:])
	for i := range 3 {
		resp, err := l.Do(t.Context(), newRequest(t, "GET", "https://192.168.1.20/api/config"), pin, 0)
		if err != nil {
			t.Fatalf("request %d: Do(pinned device) = %v, want a response", i, err)
		}
		if string(resp.Body) != "device" || resp.RemoteAddr != netip.MustParseAddrPort("192.168.1.20:443") {
			t.Errorf("request %d: Do(pinned device) = %q from %v, want %q from 192.168.1.20:443", i, resp.Body, resp.RemoteAddr, "device")
		}
	}
	if n := len(d.Dials()); n != 1 {
		t.Errorf("three requests dialed %d time(s), want 1 (pooled)", n)
	}
}

// TestLANPinMismatch: a device presenting another certificate — another key
// under the same common name included — is refused during the handshake,
// before a single request byte reaches it.
//
// conformance: P3-C12.11-15, P3-C13-13
func TestLANPinMismatch(t *testing.T) {
	pinned := deviceCert(t, "bridge-001788fffe123456")
	pin := transports.Fingerprint(pinned.Certificate[0])
	impostors := map[string]string{
		"same-cn": "bridge-001788fffe123456",
		"other":   "evil",
	}
	for name, cn := range impostors {
		t.Run(name, func(t *testing.T) {
			var act activity
			srv := deviceUpstream(t, act.handler(), deviceCert(t, cn), act.connState)
			l, d := lanTo(t, srv, "192.168.1.20:443")
			req := newRequest(t, "POST", "https://192.168.1.20/api/lights?token=QSECRET")
			req.Header.Set("Hue-Application-Key", "HSECRET")
			_, err := l.Do(t.Context(), req, pin, 0)
			if !errors.Is(err, transports.ErrPinMismatch) {
				t.Fatalf("Do(impostor certificate) = %v, want ErrPinMismatch", err)
			}
			if hasAny(err.Error(), "QSECRET", "HSECRET", "192.168.1.20") {
				t.Errorf("Do(impostor).Error() = %q leaks the request", err)
			}
			if len(d.Dials()) != 1 {
				t.Errorf("dials = %q, want the one handshake attempt", d.Dials())
			}
			if a, h := act.active.Load(), act.handled.Load(); a != 0 || h != 0 {
				t.Errorf("impostor saw %d active connection(s) and %d request(s), want 0 and 0", a, h)
			}
		})
	}
}

// TestLANPinNotPooledAcross: a connection verified against one pin never
// serves a request carrying another.
//
// conformance: P3-C12.11-14, P3-C12.11-15
func TestLANPinNotPooledAcross(t *testing.T) {
	var act activity
	cert := deviceCert(t, "bridge")
	srv := deviceUpstream(t, act.handler(), cert, nil)
	l, _ := lanTo(t, srv, "192.168.1.20:443")
	good := transports.Fingerprint(cert.Certificate[0])
	bad := strings.Repeat("ab", 32)
	for i, step := range []struct {
		pin string
		ok  bool
	}{{good, true}, {bad, false}, {good, true}, {bad, false}} {
		_, err := l.Do(t.Context(), newRequest(t, "GET", "https://192.168.1.20/"), step.pin, 0)
		if step.ok && err != nil {
			t.Errorf("step %d: Do(right pin) = %v, want a response", i, err)
		}
		if !step.ok && !errors.Is(err, transports.ErrPinMismatch) {
			t.Errorf("step %d: Do(wrong pin, right pin's connection pooled) = %v, want ErrPinMismatch", i, err)
		}
	}
	if n := act.handled.Load(); n != 2 {
		t.Errorf("device served %d request(s), want 2 (the right-pin ones)", n)
	}
}

// TestLANPinRequired: https without a well-formed pin dials nothing.
func TestLANPinRequired(t *testing.T) {
	var act activity
	cert := deviceCert(t, "bridge")
	srv := deviceUpstream(t, act.handler(), cert, nil)
	l, d := lanTo(t, srv, "192.168.1.20:443")
	good := transports.Fingerprint(cert.Certificate[0])
	for _, pin := range []string{"", strings.ToUpper(good), good[:63], good + "0", "sha256:" + good[7:], strings.Repeat("g", 64)} {
		if _, err := l.Do(t.Context(), newRequest(t, "GET", "https://192.168.1.20/"), pin, 0); !errors.Is(err, transports.ErrPinRequired) {
			t.Errorf("Do(pin %q) = %v, want ErrPinRequired", pin, err)
		}
	}
	if len(d.Dials()) != 0 || act.handled.Load() != 0 {
		t.Errorf("unpinned requests dialed %q, want nothing", d.Dials())
	}
}

// TestLANRefusesOtherHosts: the LAN transport admits the RFC-1918 literal
// class and nothing else; everything else is refused before a dial. With
// Public refusing the same literal, this is the whole stand-down of gate 5.
//
// conformance: P3-X14-22, P3-X14-17
func TestLANRefusesOtherHosts(t *testing.T) {
	d := &testutil.Dialer{}
	l := &transports.LAN{Dial: d.Dial}
	t.Cleanup(l.CloseIdleConnections)
	for _, url := range []string{
		"http://8.8.8.8/", "https://8.8.8.8/", "http://127.0.0.1/", "http://localhost/",
		"http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/", "http://172.32.0.1/",
		"http://hue.local/", "http://api.example.com/", "http://192.0.2.1/",
		"http://192.168.001.020/", "http://3232235796/", "http://0xc0.0xa8.1.20/",
		"http://[fd00::1]/", "http://[::ffff:192.168.1.20]/", "http://192.168.1.20./",
	} {
		if _, err := l.Do(t.Context(), newRequest(t, "GET", url), strings.Repeat("ab", 32), 0); reasonOf(err) == "" {
			t.Errorf("LAN.Do(%s) = %v, want a *BlockedError", url, err)
		}
	}
	for _, url := range []string{"ftp://192.168.1.20/", "ws://192.168.1.20/"} {
		if _, err := l.Do(t.Context(), newRequest(t, "GET", url), "", 0); !errors.Is(err, transports.ErrScheme) {
			t.Errorf("LAN.Do(%s) = %v, want ErrScheme", url, err)
		}
	}
	// A Host header naming another host than the URL, and userinfo, are
	// refused before any dial.
	override := newRequest(t, "GET", "https://192.168.1.20/")
	override.Host = "192.168.1.21"
	for _, req := range []*http.Request{override, newRequest(t, "GET", "https://user:pw@192.168.1.20/")} {
		if _, err := l.Do(t.Context(), req, strings.Repeat("ab", 32), 0); !errors.Is(err, transports.ErrRequestRefused) {
			t.Errorf("LAN.Do(%s, Host %q) = %v, want ErrRequestRefused", req.URL.Redacted(), req.Host, err)
		}
	}
	if dials := d.Dials(); len(dials) != 0 {
		t.Errorf("refused LAN requests dialed %q, want nothing", dials)
	}
	// The same device literal is refused by the public transport.
	p := &transports.Public{Dial: d.Dial}
	if _, err := p.Resolve(t.Context(), "192.168.1.20"); reasonOf(err) != "rfc1918" {
		t.Errorf("Public.Resolve(192.168.1.20) = %v, want reason rfc1918", err)
	}
}

// TestProbe: first pairing reads the device's leaf certificate, returns its
// SHA-256 fingerprint (what _connection.lanPin records) and common name,
// sends no HTTP request, and the fingerprint then works as the pin.
//
// conformance: P3-C12.11-13, P3-C12.11-14
func TestProbe(t *testing.T) {
	var act activity
	cert := deviceCert(t, "bridge-001788fffe123456")
	srv := deviceUpstream(t, act.handler(), cert, act.connState)
	l, d := lanTo(t, srv, "192.168.1.20:443")
	d.Route("192.168.1.20:8443", srv.Listener.Addr().String())

	for _, addr := range []string{"192.168.1.20", "192.168.1.20:8443"} {
		fp, cn, err := l.Probe(t.Context(), addr)
		if err != nil {
			t.Fatalf("Probe(%q) = %v", addr, err)
		}
		sum := sha256.Sum256(cert.Certificate[0])
		if want := hex.EncodeToString(sum[:]); fp != want {
			t.Errorf("Probe(%q) fingerprint = %q, want SHA-256 of the leaf DER %q", addr, fp, want)
		}
		if cn != "bridge-001788fffe123456" {
			t.Errorf("Probe(%q) cn = %q, want %q", addr, cn, "bridge-001788fffe123456")
		}
	}
	if a, h := act.active.Load(), act.handled.Load(); a != 0 || h != 0 {
		t.Errorf("Probe sent %d request(s) (%d active connections), want none", h, a)
	}
	fp, _, _ := l.Probe(t.Context(), "192.168.1.20")
	if _, err := l.Do(t.Context(), newRequest(t, "GET", "https://192.168.1.20/"), fp, 0); err != nil {
		t.Errorf("Do with the probed fingerprint as pin = %v, want a response", err)
	}
}

// TestProbeRefuses: Probe reaches the LAN class only and reports failures
// without addresses in the text.
func TestProbeRefuses(t *testing.T) {
	d := &testutil.Dialer{}
	l := &transports.LAN{Dial: d.Dial}
	for _, addr := range []string{"8.8.8.8", "127.0.0.1:443", "hue.local", "192.168.1.20:0", "192.168.1.20:", "[fd00::1]:443", "192.168.1.020"} {
		if _, _, err := l.Probe(t.Context(), addr); reasonOf(err) == "" {
			t.Errorf("Probe(%q) = %v, want a *BlockedError", addr, err)
		}
	}
	if dials := d.Dials(); len(dials) != 0 {
		t.Errorf("refused probes dialed %q, want nothing", dials)
	}
	_, _, err := l.Probe(t.Context(), "10.0.0.9")
	var fe *transports.FetchError
	if !errors.As(err, &fe) || strings.Contains(err.Error(), "10.0.0.9") {
		t.Errorf("Probe(unreachable) = %v, want a *FetchError without the address", err)
	}
}

// TestProbeCNIsSanitized: the common name is attacker-chosen; Probe keeps
// printable ASCII, 64 bytes at most.
func TestProbeCNIsSanitized(t *testing.T) {
	cert := deviceCert(t, "evil\x1b[2J\u202ename ~\x7f"+strings.Repeat("x", 100))
	srv := deviceUpstream(t, http.NotFoundHandler(), cert, nil)
	l, _ := lanTo(t, srv, "192.168.1.20:443")
	_, cn, err := l.Probe(t.Context(), "192.168.1.20")
	if err != nil {
		t.Fatalf("Probe = %v", err)
	}
	if len(cn) != 64 || strings.ContainsAny(cn, "\x1b\u202e\x7f") || !strings.HasPrefix(cn, "evil[2Jname ~x") {
		t.Errorf("Probe cn = %q, want printable ASCII, at most 64 bytes", cn)
	}
}

// TestLANHTTPIgnoresPin: plain http to the literal is sent when asked; the
// pin plays no part.
func TestLANHTTPIgnoresPin(t *testing.T) {
	var act activity
	srv := httpUpstream(t, act.handler())
	l, d := lanTo(t, srv, "10.0.0.5:80")
	resp, err := l.Do(t.Context(), newRequest(t, "GET", "http://10.0.0.5/"), "", 0)
	if err != nil || string(resp.Body) != "device" {
		t.Fatalf("Do(http://10.0.0.5/) = %v, %v; want %q", resp, err, "device")
	}
	if dials := d.Dials(); len(dials) != 1 || dials[0] != "10.0.0.5:80" {
		t.Errorf("dials = %q, want [10.0.0.5:80]", dials)
	}
}
