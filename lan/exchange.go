package lan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Exchange bounds.
const (
	DefaultPairWindow = 30 * time.Second // the bridge's own link window
	MaxPairWindow     = 60 * time.Second
	pollInterval      = time.Second      // between POST /api attempts
	requestTimeout    = 10 * time.Second // one probe or POST, dial to body
	maxCNBytes        = 64
	maxDeviceName     = 19 // Hue: devicetype is "<app ≤ 20>#<device ≤ 19>"
)

// StatePressButton is the Progress state while the bridge waits for its
// link button.
const StatePressButton = "press-button"

// DialFunc opens a TCP connection, as net.Dialer.DialContext does. The
// exchange calls it with network "tcp" and the one address it may reach,
// "<candidate>:443", and with nothing else.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Candidate is a device that passed the verify probe: the bridge it says it
// is, and the certificate it presented, whose fingerprint is the pin to
// record when pairing succeeds (TOFU).
type Candidate struct {
	Address netip.Addr   // the RFC-1918 address probed
	Bridge  BridgeConfig // what GET /api/0/config answered
	Pin     string       // SHA-256 of the leaf certificate's DER, lowercase hex (Fingerprint)
	CN      string       // the leaf's common name: diagnostic only, never a trust input
}

// Verify is the verify probe of the exchange family: it asks the
// device at addr for GET https://<addr>/api/0/config and returns a
// Candidate when the answer looks like a Hue bridge (a bridge id, a Hue
// model id, a software and an API version). It records the leaf
// certificate the device presented; it trusts nothing, since a bridge's
// certificate names no host a client could check and first pairing is
// trust on first use.
//
// addr must pass ParseAddress (else ErrNotPrivate, and nothing is dialed).
// dial reaches the device; nil means a net.Dialer that can connect to
// nothing but addr:443. Errors are the fixed refusals ErrUnreachable and
// ErrNotBridge, or ctx's error when ctx ended first. Safe for concurrent
// use.
func Verify(ctx context.Context, addr string, dial DialFunc) (Candidate, error) {
	a, err := ParseAddress(addr)
	if err != nil {
		return Candidate{}, err
	}
	target := netip.AddrPortFrom(a, 443)
	cl := newClient(target, dial, "")
	defer cl.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "https://"+a.String()+"/api/0/config", nil)
	if err != nil {
		return Candidate{}, ErrUnreachable
	}
	req.Header.Set("Accept", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		return Candidate{}, orCtx(ctx, ErrUnreachable)
	}
	defer resp.Body.Close()
	body, err := readAnswer(resp.Body)
	switch {
	case errors.Is(err, errTooLong):
		return Candidate{}, ErrNotBridge
	case err != nil:
		return Candidate{}, orCtx(ctx, ErrUnreachable)
	}
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return Candidate{}, ErrNotBridge
	}
	cfg, err := parseConfig(body)
	if err != nil {
		return Candidate{}, err
	}
	leaf := resp.TLS.PeerCertificates[0]
	return Candidate{
		Address: a,
		Bridge:  cfg,
		Pin:     Fingerprint(leaf.Raw),
		CN:      printable(leaf.Subject.CommonName, maxCNBytes),
	}, nil
}

// PairConfig configures Pair. Only Dial matters to most callers; the zero
// value of the rest is the documented default.
type PairConfig struct {
	// Dial reaches the bridge; nil means a net.Dialer that can connect to
	// nothing but the candidate's address on port 443.
	Dial DialFunc

	// Host is this machine's name (os.Hostname); the bridge lists the
	// client as DeviceType(Host) in the Hue app. "" means "snugd".
	Host string

	// Window is how long to wait for the link button: zero means
	// DefaultPairWindow; it is capped at MaxPairWindow.
	Window time.Duration

	// Status, when set, is called once when the bridge first answers that
	// its link button is not pressed, with StatePressButton and the
	// deadline. It runs on Pair's goroutine and must return promptly.
	Status func(Progress)
}

// Progress is a pairing's state as Status reports it.
type Progress struct {
	State    string    // StatePressButton
	Deadline time.Time // when Pair gives up on the button
}

// Credentials is what a successful pairing returns: the application key
// (the bridge calls it username; CLIP v2 takes it as the
// hue-application-key header), the client key (entertainment streaming;
// empty on old firmware), the pin of the certificate the bridge presented
// throughout, and its diagnostic CN. Write them together, with
// lanVerifiedAt, in one transaction.
type Credentials struct {
	BridgeID  string
	Username  Secret
	ClientKey Secret
	Pin       string
	CN        string
}

// Pair runs the link-button exchange against a Candidate from Verify:
// POST https://<addr>/api {"devicetype": …, "generateclientkey": true},
// repeated about once a second while the bridge answers error 101 (link
// button not pressed), until it answers success, the window ends or ctx
// does. Every connection it opens must present the candidate's certificate
// (the pin): a different leaf ends the TLS handshake before any request
// byte is written, and Pair returns ErrCertificateChanged.
//
// Errors: ErrBadCandidate, ErrNotPrivate, ErrCertificateChanged,
// ErrLinkTimeout, ErrPairingRefused, ErrBadAnswer, ErrUnreachable (the
// first request failed), ErrVanished (a later one did), or ctx's error
// when ctx ended first. Safe for concurrent use; the caller keeps one
// pairing per bridge at a time.
func Pair(ctx context.Context, c Candidate, cfg PairConfig) (Credentials, error) {
	if !validPin(c.Pin) || !c.Address.IsValid() {
		return Credentials{}, ErrBadCandidate
	}
	if !IsPrivate(c.Address) {
		return Credentials{}, ErrNotPrivate
	}
	window := cfg.Window
	if window <= 0 {
		window = DefaultPairWindow
	}
	window = min(window, MaxPairWindow)
	body, err := json.Marshal(struct {
		DeviceType        string `json:"devicetype"`
		GenerateClientKey bool   `json:"generateclientkey"`
	}{DeviceType(cfg.Host), true})
	if err != nil {
		return Credentials{}, err
	}

	target := netip.AddrPortFrom(c.Address, 443)
	cl := newClient(target, cfg.Dial, c.Pin)
	defer cl.CloseIdleConnections()
	deadline := time.Now().Add(window)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	reported := false
	for attempt := 0; ; attempt++ {
		ans, err := postLink(wctx, cl, target, body, c.Pin)
		switch {
		case ctx.Err() != nil:
			return Credentials{}, ctx.Err()
		case wctx.Err() != nil:
			return Credentials{}, ErrLinkTimeout
		case errors.Is(err, ErrCertificateChanged), errors.Is(err, ErrPairingRefused), errors.Is(err, ErrBadAnswer):
			return Credentials{}, err
		case err != nil && attempt == 0:
			return Credentials{}, ErrUnreachable
		case err != nil:
			return Credentials{}, ErrVanished
		case !ans.pending:
			return Credentials{
				BridgeID:  c.Bridge.BridgeID,
				Username:  Secret{ans.username},
				ClientKey: Secret{ans.clientKey},
				Pin:       c.Pin,
				CN:        c.CN,
			}, nil
		}
		if !reported && cfg.Status != nil {
			reported = true
			cfg.Status(Progress{State: StatePressButton, Deadline: deadline})
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return Credentials{}, ctx.Err()
			}
			return Credentials{}, ErrLinkTimeout
		}
	}
}

// postLink sends one POST /api and reads its answer.
func postLink(ctx context.Context, cl *http.Client, target netip.AddrPort, body []byte, pin string) (linkAnswer, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, "https://"+target.Addr().String()+"/api", bytes.NewReader(body))
	if err != nil {
		return linkAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		if errors.Is(err, ErrCertificateChanged) {
			return linkAnswer{}, ErrCertificateChanged
		}
		return linkAnswer{}, err
	}
	defer resp.Body.Close()
	// The handshake already refused any other leaf; checking the answer's
	// connection again costs nothing and keeps the rule in one more place.
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || CheckPin(pin, resp.TLS.PeerCertificates[0].Raw) != nil {
		return linkAnswer{}, ErrCertificateChanged
	}
	b, err := readAnswer(resp.Body)
	switch {
	case errors.Is(err, errTooLong):
		return linkAnswer{}, ErrBadAnswer
	case err != nil:
		return linkAnswer{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return linkAnswer{}, ErrBadAnswer
	}
	return parseLinkAnswer(b)
}

// DeviceType returns the devicetype snugd names itself with to a bridge:
// "snugd#<host>", host reduced to at most 19 letters, digits, '-' and '_'
// (the bridge's limit), "snugd" when nothing is left.
func DeviceType(host string) string {
	out := make([]byte, 0, maxDeviceName)
	for i := 0; i < len(host) && len(out) < maxDeviceName; i++ {
		c := host[i]
		if c == '.' {
			break // the first label of a host name is the machine's name
		}
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "snugd#snugd"
	}
	return "snugd#" + string(out)
}

// Fingerprint returns the pin of a certificate: the SHA-256 of its DER, in
// lowercase hex (64 characters). It is the same spelling the LAN transport
// verifies (transports.Fingerprint).
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// CheckPin reports, as ErrCertificateChanged, that the certificate whose
// DER is leaf does not have the fingerprint pin; nil when it does. A
// malformed pin never matches. The comparison is constant-time, which a
// public fingerprint does not need but costs nothing.
func CheckPin(pin string, leaf []byte) error {
	if !validPin(pin) || subtle.ConstantTimeCompare([]byte(Fingerprint(leaf)), []byte(pin)) != 1 {
		return ErrCertificateChanged
	}
	return nil
}

// validPin reports whether pin is 64 lowercase hex digits.
func validPin(pin string) bool {
	if len(pin) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(pin); i++ {
		if c := pin[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// newClient builds the HTTP client of one probe or pairing. It can reach
// nothing but target: its dialer refuses every other address before the
// caller's dial sees it, it never uses a proxy and never follows a
// redirect.
//
// TLS: a bridge's certificate is self-signed (or signed by Signify's
// private root) and names the bridge id, not an address, so chain and name
// verification cannot apply; InsecureSkipVerify turns them off, and only
// ever together with VerifyConnection, which is then the one trust
// decision. With a pin, VerifyConnection accepts exactly the leaf whose
// fingerprint is the pin and fails the handshake otherwise, before the
// client writes a request byte. Without a pin (the verify probe) it
// accepts any leaf, which Verify records as the candidate pin: trust on
// first use, a residual the host discloses.
func newClient(target netip.AddrPort, dial DialFunc, pin string) *http.Client {
	if dial == nil {
		d := &net.Dialer{Timeout: requestTimeout, Control: onlyTo(target)}
		dial = d.DialContext
	}
	tlsConf := &tls.Config{
		InsecureSkipVerify: true, // see VerifyConnection
		MinVersion:         tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrCertificateChanged
			}
			if pin == "" {
				return nil // the verify probe: record, do not trust
			}
			return CheckPin(pin, cs.PeerCertificates[0].Raw)
		},
	}
	rt := &http.Transport{
		Proxy: nil, // never a proxy, whatever the environment says
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			if address != target.String() {
				return nil, ErrNotPrivate
			}
			return dial(ctx, "tcp", target.String())
		},
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    requestTimeout,
		ResponseHeaderTimeout:  requestTimeout,
		MaxIdleConnsPerHost:    1,
		MaxResponseHeaderBytes: 16 << 10,
		DisableCompression:     true,
	}
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// onlyTo is the default dialer's last look at the socket address: it
// refuses anything but target.
func onlyTo(target netip.AddrPort) func(string, string, syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || ap.Addr().Unmap() != target.Addr() || ap.Port() != target.Port() {
			return ErrNotPrivate
		}
		return nil
	}
}

// orCtx returns ctx's error when ctx has ended, else err.
func orCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
