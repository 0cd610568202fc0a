package template

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// The helpers of the pinned enum, except cdp_jwt (jwt.go) and
// timestamp, which is the pass's memoized value (render.go). Each appends its
// output to dst. Their outputs are ASCII (hex or base64), so no helper can
// put a byte into a header that the header check would refuse.

// appendBase64 is base64(s): standard base64 with padding of the UTF-8 bytes.
func (r *renderer) appendBase64(dst []byte, a operand) []byte {
	r.tmp = r.appendOperand(r.tmp[:0], a)
	return base64.StdEncoding.AppendEncode(dst, r.tmp)
}

// appendHMACHex is hmac_sha256(key, message): lowercase hex of
// HMAC-SHA256 keyed with the key's bytes as they are.
func (r *renderer) appendHMACHex(dst []byte, key, msg operand) []byte {
	r.tmp = r.appendOperand(r.tmp[:0], key)
	mac := hmac.New(sha256.New, r.tmp) // copies the key
	r.tmp = r.appendOperand(r.tmp[:0], msg)
	mac.Write(r.tmp)
	return hex.AppendEncode(dst, mac.Sum(r.tmp[:0])) // the message is spent: its scratch takes the sum
}

// appendHMACB64 is hmac_sha256_b64(secret, parts…):
// base64(HMAC-SHA256(base64decode(secret), concat(parts))). A secret that is
// not standard base64 (padded or not) is an error naming its field.
func (r *renderer) appendHMACB64(dst []byte, secret operand, parts []operand) ([]byte, error) {
	var ok bool
	r.src = r.appendOperand(r.src[:0], secret)
	r.tmp, ok = decodeStdBase64(r.tmp[:0], r.src)
	if !ok {
		return nil, errors.New("hmac_sha256_b64: secret in " + r.describe(secret) + " is not standard base64")
	}
	mac := hmac.New(sha256.New, r.tmp) // copies the key
	r.tmp = r.tmp[:0]
	for _, p := range parts {
		r.tmp = r.appendOperand(r.tmp, p)
	}
	mac.Write(r.tmp)
	return base64.StdEncoding.AppendEncode(dst, mac.Sum(r.tmp[:0])), nil
}

// decodeStdBase64 appends the decoding of src to dst. src is standard
// base64, padded or unpadded, with canonical trailing bits; unlike
// encoding/base64 it refuses embedded CR and LF too.
func decodeStdBase64(dst, src []byte) ([]byte, bool) {
	if bytes.ContainsAny(src, "\r\n") {
		return dst, false
	}
	enc := base64.StdEncoding.Strict()
	if len(src)%4 != 0 {
		enc = base64.RawStdEncoding.Strict()
	}
	out, err := enc.AppendDecode(dst, src)
	if err != nil {
		return dst, false
	}
	return out, true
}
