package template

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// cdpJWTLifetime is exp - nbf of a cdp_jwt, in seconds (the CDP
// SDK's default expiresIn).
const cdpJWTLifetime = 120

// appendCDPJWT is cdp_jwt(keyName, privateKey) as snugd reads
// it: the compact JWS Coinbase's CDP SDK makes for an Ed25519 key. Header
// {"alg":"EdDSA","kid":keyName,"nonce":<16 random bytes, hex>,"typ":"JWT"};
// claims {"sub":keyName,"iss":"cdp","aud":["cdp_service"],"nbf":ts,"iat":ts,
// "exp":ts+120,"uris":["METHOD host/path"]} with the pass's timestamp;
// base64url without padding. The algorithm is fixed: there is nothing to
// negotiate, and a key that is not Ed25519 is an error.
func (r *renderer) appendCDPJWT(dst []byte, keyName, privateKey operand) ([]byte, error) {
	kid := string(r.appendOperand(nil, keyName))
	if !utf8.ValidString(kid) {
		return nil, errors.New("cdp_jwt: key name in " + r.describe(keyName) + " is not valid UTF-8")
	}
	r.src = r.appendOperand(r.src[:0], privateKey)
	key, why := ed25519Key(r.src)
	if why != "" {
		return nil, errors.New("cdp_jwt: private key in " + r.describe(privateKey) + " " + why)
	}
	uri, err := cdpURI(r.req)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	if _, err := io.ReadFull(r.rand(), nonce[:]); err != nil {
		return nil, errors.New("cdp_jwt: read nonce: " + err.Error())
	}

	r.tmp = append(r.tmp[:0], `{"alg":"EdDSA","kid":`...)
	r.tmp = appendJSONString(r.tmp, kid)
	r.tmp = append(r.tmp, `,"nonce":"`...)
	r.tmp = hex.AppendEncode(r.tmp, nonce[:])
	r.tmp = append(r.tmp, `","typ":"JWT"}`...)
	start := len(dst)
	dst = base64.RawURLEncoding.AppendEncode(dst, r.tmp)
	dst = append(dst, '.')

	r.tmp = append(r.tmp[:0], `{"sub":`...)
	r.tmp = appendJSONString(r.tmp, kid)
	r.tmp = append(r.tmp, `,"iss":"cdp","aud":["cdp_service"],"nbf":`...)
	r.tmp = strconv.AppendInt(r.tmp, r.ts, 10)
	r.tmp = append(r.tmp, `,"iat":`...)
	r.tmp = strconv.AppendInt(r.tmp, r.ts, 10)
	r.tmp = append(r.tmp, `,"exp":`...)
	r.tmp = strconv.AppendInt(r.tmp, r.ts+cdpJWTLifetime, 10)
	r.tmp = append(r.tmp, `,"uris":[`...)
	r.tmp = appendJSONString(r.tmp, uri)
	r.tmp = append(r.tmp, "]}"...)
	dst = base64.RawURLEncoding.AppendEncode(dst, r.tmp)

	sig := ed25519.Sign(key, dst[start:])
	dst = append(dst, '.')
	return base64.RawURLEncoding.AppendEncode(dst, sig), nil
}

// ed25519Key reads a cdp_jwt private key: standard base64 (padded or not) of
// 64 bytes, seed ‖ public key, as the CDP SDK issues it, or of a 32-byte
// seed. A 64-byte key whose public half is not its seed's is
// refused: it would sign with one key and claim another. why says what is
// wrong, without the value.
func ed25519Key(b64 []byte) (key ed25519.PrivateKey, why string) {
	if bytes.HasPrefix(bytes.TrimSpace(b64), []byte("-----BEGIN")) {
		return nil, "is a PEM key: cdp_jwt signs with Ed25519 only"
	}
	raw, ok := decodeStdBase64(nil, b64)
	if !ok {
		return nil, "is not standard base64"
	}
	defer clear(raw)
	switch len(raw) {
	case ed25519.PrivateKeySize:
		key = ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if subtle.ConstantTimeCompare(key[ed25519.SeedSize:], raw[ed25519.SeedSize:]) != 1 {
			clear(key)
			return nil, "is not an Ed25519 key: its public half does not match its seed"
		}
		return key, ""
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), ""
	}
	return nil, "is not an Ed25519 key: cdp_jwt takes base64 of a 64-byte seed and public key or of a 32-byte seed"
}

// cdpURI forms the entry of the uris claim: "METHOD host/path".
//
// As of 2026-11-30 Coinbase's CDP SDK (github.com/coinbase/cdp-sdk) forms it
// as `${method} ${host}${path}` in typescript/src/auth/utils/jwt.ts and
// go/auth/jwt.go. Its TypeScript request hook
// (typescript/src/auth/hooks/axios/withAuth.ts) passes the WHATWG URL's host
// and pathname, and its Go client (go/cdp.go) passes req.Host and
// req.URL.Path: the host carries a port only when it is not the scheme's
// default, and the query is never included. We follow the TypeScript SDK:
// the lowercased host with a default port dropped, and the path exactly as
// it will be sent ("/" when empty), without the query.
func cdpURI(req Request) (string, error) {
	if req.Method == "" {
		return "", errors.New("cdp_jwt: the request has no method")
	}
	u, err := url.Parse(req.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", errors.New("cdp_jwt: the request url is not an absolute http or https url")
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "https" && p == "443") || (u.Scheme == "http" && p == "80") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return req.Method + " " + host + path, nil
}

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
