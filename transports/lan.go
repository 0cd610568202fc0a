package transports

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// maxCNBytes bounds the diagnostic common name Probe returns.
const maxCNBytes = 64

// LAN is the transport to a device on the user's own network: HTTP
// or HTTPS to an RFC-1918 IPv4 literal. It is the one place the SSRF guard
// stands down, so it admits nothing else: the URL host must be a
// canonical dotted quad in 10/8, 172.16/12 or 192.168/16 (CheckLANHost), and
// it dials exactly that literal (no DNS, no proxy). It never follows a
// redirect and reads the body under a cap, like Public.
//
// For https the device's certificate is trusted by its pin alone (TOFU,
// the connection's lanPin): the SHA-256 of the leaf certificate's DER must
// equal the pin. Chain, name and expiry are not checked, because a device's
// certificate is self-signed and names no host; the common name is
// diagnostic only, never a trust input. A mismatch aborts the handshake
// before any request byte is written. The pairing window stays a residual
// the host must disclose: an attacker already on the LAN at first pairing can
// be pinned instead of the device.
//
// Whether a request may use the LAN class (the desktop transport policy
// and a ceiling holding the literal) is the executor's decision;
// plain http is sent when the executor asks for it.
//
// The zero LAN is ready to use. A LAN must not be copied after first use; it
// is safe for concurrent use.
type LAN struct {
	// Dial opens TCP connections. Nil means a net.Dialer whose Control hook
	// refuses any socket address outside the RFC-1918 class. Tests only: an
	// injected Dial is handed only the checked literal and port.
	Dial DialFunc

	// Timeouts as for Public (zero: 10s, 10s, 2m, 90s).
	DialTimeout           time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	IdleConnTimeout       time.Duration

	pool pool
}

// Do sends req to the LAN device its URL names and returns the answer with
// the body read under limit bytes (limit ≤ 0 means MaxBodyBytes).
//
// req.URL must be http or https (else ErrScheme) with a host CheckLANHost
// accepts (else a *BlockedError, and nothing is dialed). For https, pin is
// the device's certificate fingerprint as Fingerprint spells it; a missing
// or malformed pin is ErrPinRequired and a certificate that does not match is
// ErrPinMismatch. For http the pin is not used. A 3xx answer comes back as a
// Response with a nil Body and is never followed. Other errors as
// for Public.Do; Do closes req.Body, even on error.
func (l *LAN) Do(ctx context.Context, req *http.Request, pin string, limit int64) (*Response, error) {
	if req.URL == nil || (req.URL.Scheme != "https" && req.URL.Scheme != "http") {
		return abandon(req, ErrScheme)
	}
	u := req.URL
	if u.User != nil || u.Opaque != "" || (req.Host != "" && req.Host != u.Host) {
		return abandon(req, ErrRequestRefused)
	}
	addr, err := CheckLANHost(u.Hostname())
	if err != nil {
		return abandon(req, err)
	}
	def := uint16(80)
	if u.Scheme == "https" {
		def = 443
		if !validPin(pin) {
			return abandon(req, ErrPinRequired)
		}
	} else {
		pin = ""
	}
	port, err := splitPort(u.Port(), def)
	if err != nil {
		return abandon(req, err)
	}
	target := netip.AddrPortFrom(addr, port)
	key := u.Scheme + "|" + target.String() + "|" + pin
	rt := l.pool.get(key, func() *http.Transport { return l.newTransport(target, pin) })
	return roundTrip(ctx, rt, req, limit)
}

// CloseIdleConnections closes every idle pooled connection.
func (l *LAN) CloseIdleConnections() { l.pool.closeIdle() }

// Probe connects to a LAN device at addr ("192.168.1.20" or
// "192.168.1.20:8443"; port 443 when none is given), completes a TLS
// handshake without trusting anything, and returns the SHA-256 fingerprint of
// the leaf certificate (as Fingerprint spells it) and its common name. It
// sends no HTTP request. First pairing records the fingerprint as the pin
// (the connection's lanPin); cn is diagnostic only, reduced to printable ASCII and
// at most 64 bytes. addr must pass CheckLANHost (else a *BlockedError);
// other failures are *FetchError.
func (l *LAN) Probe(ctx context.Context, addr string) (fingerprint, cn string, err error) {
	host, port := addr, uint16(443)
	if h, p, err := net.SplitHostPort(addr); err == nil {
		host = h
		if port, err = splitPort(p, 443); err != nil || p == "" {
			return "", "", &BlockedError{Reason: reasonMalformed}
		}
	}
	a, err := CheckLANHost(host)
	if err != nil {
		return "", "", err
	}
	target := netip.AddrPortFrom(a, port)
	conn, err := l.dialer()(ctx, "tcp", target.String())
	if err != nil {
		return "", "", failure(ctx, "dial", err)
	}
	defer conn.Close()
	tc := tls.Client(conn, &tls.Config{
		// Probe trusts nothing and sends nothing: it only reads the leaf
		// certificate the device presents, to be pinned (TOFU).
		InsecureSkipVerify: true,
		MinVersion:         tls.VersionTLS12,
	})
	hctx, cancel := context.WithTimeout(ctx, orDefault(l.TLSHandshakeTimeout, defaultTLSHandshakeTimeout))
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return "", "", failure(ctx, "tls", err)
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", "", &FetchError{Op: "tls"}
	}
	return Fingerprint(certs[0].Raw), printableCN(certs[0].Subject.CommonName), nil
}

// Fingerprint returns the pin of a certificate: the SHA-256 of its DER, in
// lowercase hex (64 characters).
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
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

// printableCN keeps the printable ASCII of a certificate's common name, at
// most maxCNBytes of it: the name is attacker-chosen text shown to a user.
func printableCN(s string) string {
	out := make([]byte, 0, min(len(s), maxCNBytes))
	for i := 0; i < len(s) && len(out) < maxCNBytes; i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e {
			out = append(out, c)
		}
	}
	return string(out)
}

func (l *LAN) dialer() DialFunc {
	if l.Dial != nil {
		return l.Dial
	}
	d := &net.Dialer{
		Timeout:   orDefault(l.DialTimeout, defaultDialTimeout),
		KeepAlive: 30 * time.Second,
		Control:   lanControl,
	}
	return d.DialContext
}

// newTransport builds the transport for one device address and pin. Its
// dialer can dial nothing but target, and its TLS configuration accepts
// nothing but the pinned leaf.
func (l *LAN) newTransport(target netip.AddrPort, pin string) *http.Transport {
	dial := l.dialer()
	dialTimeout := orDefault(l.DialTimeout, defaultDialTimeout)
	rt := &http.Transport{
		Proxy: nil, // never a proxy, whatever the environment says
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			if address != target.String() {
				return nil, ErrRequestRefused
			}
			if _, err := CheckLANHost(target.Addr().String()); err != nil {
				return nil, err // cannot happen: Do checked it
			}
			dctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			c, err := dial(dctx, "tcp", target.String())
			if err != nil {
				return nil, err
			}
			return &dialedConn{Conn: c, checked: target}, nil
		},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    orDefault(l.TLSHandshakeTimeout, defaultTLSHandshakeTimeout),
		ResponseHeaderTimeout:  orDefault(l.ResponseHeaderTimeout, defaultResponseHeaderTimeout),
		IdleConnTimeout:        orDefault(l.IdleConnTimeout, defaultIdleConnTimeout),
		MaxIdleConnsPerHost:    2,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		DisableCompression:     true,
	}
	if pin != "" {
		want := []byte(pin)
		rt.TLSClientConfig = &tls.Config{
			// The pin is the only trust input (TOFU): chain and
			// name verification cannot apply to a device's self-signed
			// certificate, so they are replaced by VerifyConnection below,
			// which runs during the handshake, before any request byte.
			InsecureSkipVerify: true,
			MinVersion:         tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return ErrPinMismatch
				}
				got := []byte(Fingerprint(cs.PeerCertificates[0].Raw))
				if subtle.ConstantTimeCompare(got, want) != 1 {
					return ErrPinMismatch
				}
				return nil
			},
		}
	}
	return rt
}

// lanControl is the default LAN dialer's last look at the socket address: a
// backstop that refuses anything outside the RFC-1918 class.
func lanControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Reason: reasonMalformed}
	}
	_, err = CheckLANHost(ap.Addr().String())
	return err
}
