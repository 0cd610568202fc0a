package lan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// maxAnswerBytes caps the body of a bridge answer: the public config is
// under 1 KiB, a pairing answer under 200 bytes.
const maxAnswerBytes = 64 << 10

// isHueModel reports whether id is the model id of a bridge that
// announces `_hue._tcp`, serves HTTPS and speaks CLIP v2: BSB002 (the
// square bridge, 2015) or BSB003 (Bridge Pro, 2025). The round BSB001 has
// neither. Checked 2026-12-01 against
// https://developers.meethue.com/develop/hue-api-v2/ and the config
// answers openHAB and Home Assistant users publish.
func isHueModel(id string) bool {
	switch id {
	case "BSB002", "BSB003":
		return true
	}
	return false
}

// BridgeConfig is the public subset of a bridge's configuration, as
// GET /api/0/config answers it without an application key. Every field
// is validated: BridgeID is 16 lowercase hex digits, ModelID a Hue
// bridge model, SWVersion digits, APIVersion dotted digits, Name
// printable ASCII.
type BridgeConfig struct {
	BridgeID   string // "001788fffe23bfc2" (the bridge spells it uppercase)
	ModelID    string // "BSB002"
	Name       string // "Hue Bridge", user-chosen, display only
	SWVersion  string // "1972004020"
	APIVersion string // "1.72.0"
}

// parseConfig reads the verify probe's answer. It accepts only a JSON
// object whose bridgeid, modelid, swversion and apiversion are strings of
// the documented forms and whose modelid is a Hue bridge model; anything
// else is ErrNotBridge. Other keys (mac, datastoreversion, factorynew,
// replacesbridgeid, starterkitid) are ignored.
func parseConfig(body []byte) (BridgeConfig, error) {
	var raw struct {
		Name       *string `json:"name"`
		BridgeID   *string `json:"bridgeid"`
		ModelID    *string `json:"modelid"`
		SWVersion  *string `json:"swversion"`
		APIVersion *string `json:"apiversion"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || len(body) > maxAnswerBytes {
		return BridgeConfig{}, ErrNotBridge
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return BridgeConfig{}, ErrNotBridge
	}
	if raw.BridgeID == nil || raw.ModelID == nil || raw.SWVersion == nil || raw.APIVersion == nil {
		return BridgeConfig{}, ErrNotBridge
	}
	id, ok := NormalizeBridgeID(*raw.BridgeID)
	if !ok || !isHueModel(*raw.ModelID) || !digits(*raw.SWVersion, 16) || !version(*raw.APIVersion) {
		return BridgeConfig{}, ErrNotBridge
	}
	c := BridgeConfig{BridgeID: id, ModelID: *raw.ModelID, SWVersion: *raw.SWVersion, APIVersion: *raw.APIVersion}
	if raw.Name != nil {
		c.Name = printable(*raw.Name, maxNameBytes)
	}
	return c, nil
}

// digits reports whether s is 1 to n ASCII digits.
func digits(s string, n int) bool {
	if s == "" || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// version reports whether s is a dotted version of up to four numbers
// ("1.72.0").
func version(s string) bool {
	if len(s) > 23 {
		return false
	}
	parts := bytes.Split([]byte(s), []byte("."))
	if len(parts) < 2 || len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		if !digits(string(p), 5) {
			return false
		}
	}
	return true
}

// linkNotPressed is the error type a bridge answers POST /api with while
// its link button has not been pressed in the last 30 seconds.
const linkNotPressed = 101

// A linkAnswer is what one POST /api answer says: the key and client key
// on success, or pending while the link button is not pressed.
type linkAnswer struct {
	pending   bool
	username  string
	clientKey string
}

// parseLinkAnswer reads a bridge's answer to POST /api. The documented
// shapes are a JSON array whose first element is
// {"success":{"username":"…","clientkey":"…"}} or
// {"error":{"type":101,"address":"","description":"link button not pressed"}}.
// Error 101 is pending; another error type is ErrPairingRefused; any other
// shape, or a username or client key that is not plain token text, is
// ErrBadAnswer. The bridge's description is never read.
func parseLinkAnswer(body []byte) (linkAnswer, error) {
	if len(body) > maxAnswerBytes {
		return linkAnswer{}, ErrBadAnswer
	}
	var items []struct {
		Success *struct {
			Username  *string `json:"username"`
			ClientKey *string `json:"clientkey"`
		} `json:"success"`
		Error *struct {
			Type *int `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &items); err != nil || len(items) == 0 {
		return linkAnswer{}, ErrBadAnswer
	}
	first := items[0]
	switch {
	case first.Success != nil && first.Error != nil:
		return linkAnswer{}, ErrBadAnswer
	case first.Error != nil:
		if first.Error.Type == nil {
			return linkAnswer{}, ErrBadAnswer
		}
		if *first.Error.Type == linkNotPressed {
			return linkAnswer{pending: true}, nil
		}
		return linkAnswer{}, ErrPairingRefused
	case first.Success != nil:
		s := first.Success
		if s.Username == nil || !token(*s.Username, 128) {
			return linkAnswer{}, ErrBadAnswer
		}
		a := linkAnswer{username: *s.Username}
		if s.ClientKey != nil {
			// Requested with generateclientkey; a bridge on firmware
			// older than 1.22 omits it, and only entertainment streaming
			// needs it.
			if !token(*s.ClientKey, 128) {
				return linkAnswer{}, ErrBadAnswer
			}
			a.clientKey = *s.ClientKey
		}
		return a, nil
	}
	return linkAnswer{}, ErrBadAnswer
}

// token reports whether s is 1 to n bytes of [A-Za-z0-9_-]: what a bridge
// mints, and safe inside a header value.
func token(s string, n int) bool {
	if s == "" || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// errTooLong is readAnswer's report of a body over maxAnswerBytes.
var errTooLong = errors.New("answer too long")

// readAnswer reads a response body under maxAnswerBytes; a longer body is
// errTooLong rather than truncated, a failed read the read's error.
func readAnswer(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAnswerBytes {
		return nil, errTooLong
	}
	return b, nil
}

// Secret is a credential the bridge minted: the application key or the
// client key. It prints, logs and marshals as REDACTED; Reveal returns the
// value for the one write that stores it.
type Secret struct{ v string }

const redacted = "REDACTED"

// Reveal returns the value; "" when there is none.
func (s Secret) Reveal() string { return s.v }

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) Format(f fmt.State, _ rune)   { io.WriteString(f, redacted) }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
