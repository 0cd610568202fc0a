package linkdevice

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"time"
)

// Stderr forwarding limits: a line is cut at maxLogLine bytes, and a
// helper may log a burst of logBurst lines, then logRate a second; lines
// over the rate are counted and dropped, never buffered.
const (
	maxLogLine = 1000
	logBurst   = 50
	logRate    = 5
)

// forwardStderr logs each stderr line of ss's helper, scrubbed, until r
// ends. Nothing a helper writes can make it hold more than one bounded
// line or log faster than the rate.
func (s *Supervisor) forwardStderr(ss *session, r io.Reader) {
	br := bufio.NewReaderSize(r, 4096)
	tokens, last := float64(logBurst), time.Now()
	dropped := 0
	for {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			now := time.Now()
			tokens = min(logBurst, tokens+now.Sub(last).Seconds()*logRate)
			last = now
			if tokens >= 1 {
				tokens--
				if dropped > 0 {
					s.log.Warn("helper log lines dropped", "helper", ss.key.HelperID, "lines", dropped)
					dropped = 0
				}
				text := cleanText(s.scrub(ss, string(line)), maxLogLine)
				s.log.Info("helper log", "helper", ss.key.HelperID, "app_id", ss.key.AppID, "slot", ss.key.Slot, "line", trimSpace(text))
			} else {
				dropped++
			}
		}
		if long { // discard the rest of an overlong line
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			if dropped > 0 {
				s.log.Warn("helper log lines dropped", "helper", ss.key.HelperID, "lines", dropped)
			}
			return
		}
	}
}

func trimSpace(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// tokenSpellings lists the forms of a helper token a helper is likely to
// log, for the scrub to remove: the token itself; the base64 (standard and
// URL alphabets, padded or not) and hex (lower- and uppercase) of its
// text; and, since a token is base64url of random bytes, those bytes in
// standard base64 (padded or not), padded base64url and hex. scrub.Set
// adds the percent- and JSON-escaped spellings of each, as it does for a
// provider's credential.
func tokenSpellings(t string) []string {
	forms := []string{t}
	add := func(b []byte) {
		h := hex.EncodeToString(b)
		forms = append(forms,
			base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
			h, strings.ToUpper(h))
	}
	add([]byte(t))
	if raw, err := base64.RawURLEncoding.DecodeString(t); err == nil {
		add(raw)
	}
	return forms
}
