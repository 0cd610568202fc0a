package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// verifierBytes is the entropy of a PKCE code verifier: 32 random bytes,
// the 43-character base64url verifier RFC 7636 §4.1 recommends (256 bits).
const verifierBytes = 32

// NewVerifier returns a fresh PKCE code verifier (RFC 7636 §4.1): 32 bytes
// from crypto/rand, base64url without padding, so 43 characters of the
// unreserved set. The verifier is a secret: it is sealed with the flow and
// submitted once, in the code exchange.
func NewVerifier() string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(verifierBytes))
}

// Challenge returns the S256 code challenge of verifier (RFC 7636 §4.2):
// BASE64URL(SHA256(ASCII(verifier))). snugd never sends the plain method.
func Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// validVerifier reports whether v is a verifier RFC 7636 §4.1 admits:
// 43–128 characters of [A-Za-z0-9-._~].
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// randomBytes returns n bytes from crypto/rand. Since Go 1.24 rand.Read
// never returns an error (it crashes the program rather than hand out
// weak randomness), so there is nothing to report.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) //nolint:errcheck // never fails, see above
	return b
}
