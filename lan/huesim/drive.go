package huesim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Drive lets another process control the simulator, for a harness that
// runs it inside a network namespace (a re-executed test binary under
// `ip netns exec`). It reads one command a line from r and answers each
// with one line on w:
//
//	press        → ok               (PressButton)
//	rotate       → ok <fingerprint> (Rotate; the new pin)
//	fingerprint  → ok <fingerprint>
//	requests     → ok <JSON array of "METHOD path">
//	vanish       → ok               (Vanish; the simulator is gone)
//	anything else → error unknown command
//
// It returns nil when r ends (the parent closed the pipe or died), or the
// first read or write error.
func (s *Sim) Drive(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var answer string
		switch strings.TrimSpace(sc.Text()) {
		case "press":
			s.PressButton()
			answer = "ok"
		case "rotate":
			if err := s.Rotate(); err != nil {
				answer = "error " + err.Error()
				break
			}
			answer = "ok " + s.Fingerprint()
		case "fingerprint":
			answer = "ok " + s.Fingerprint()
		case "requests":
			b, _ := json.Marshal(s.Requests())
			answer = "ok " + string(b)
		case "vanish":
			s.Vanish()
			answer = "ok"
		default:
			answer = "error unknown command"
		}
		if _, err := fmt.Fprintln(w, answer); err != nil {
			return err
		}
	}
	return sc.Err()
}
