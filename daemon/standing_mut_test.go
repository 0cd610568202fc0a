package daemon

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/requirement"
)

// The tests in this file hold the standing gate at the edges a one-token
// change would move: each bound of what may be armed, on both sides, the
// trigger classes a requirement may offer, the ends of the quiet hours
// and the end of the rate cap's window.

// boundsTargets offers, beside the chat rig's reply trigger, triggers of
// 64 and 65 bytes and one of each way a trigger class can be unfit to
// arm: not mutating, no body field, or a path pattern that is not an
// absolute path with exactly one {target} segment.
func boundsTargets(r *requirement.Requirement) []fetch.StandingTarget {
	ts := chatTargets(r)
	if ts == nil {
		return nil
	}
	ok := ts[0]
	with := func(trigger string, mod func(*fetch.StandingTarget)) fetch.StandingTarget {
		t := ok
		t.Trigger = trigger
		if mod != nil {
			mod(&t)
		}
		return t
	}
	return append(ts,
		with(strings.Repeat("t", 64), nil),
		with(strings.Repeat("t", 65), nil),
		with("get", func(t *fetch.StandingTarget) { t.Method = "GET" }),
		with("head", func(t *fetch.StandingTarget) { t.Method = "HEAD" }),
		with("put", func(t *fetch.StandingTarget) { t.Method = "PUT" }),
		with("nobody", func(t *fetch.StandingTarget) { t.BodyField = "" }),
		with("relative", func(t *fetch.StandingTarget) { t.PathPattern = "v1/threads/{target}/messages" }),
		with("twice", func(t *fetch.StandingTarget) { t.PathPattern = "/v1/{target}/{target}" }),
		with("brace", func(t *fetch.StandingTarget) { t.PathPattern = "/v1/{thread}/{target}" }),
		with("untargeted", func(t *fetch.StandingTarget) { t.PathPattern = "/v1/threads/messages" }),
	)
}

// TestStandingSpecBounds: each bound of a standing approval's spec, and
// each test of the trigger class it names, admits its edge and refuses
// one step past it with BAD_REQUEST.
//
// conformance: P3-S17-02, P3-S17-09, P3-S17-11
func TestStandingSpecBounds(t *testing.T) {
	r := newStandingRig(t, func(c *Config) { c.StandingTargets = boundsTargets })
	const day = 24 * time.Hour
	quiet := func(start, end time.Duration) func(*fetch.StandingSpec) {
		return func(s *fetch.StandingSpec) { s.Quiet = &fetch.QuietHours{Start: start, End: end, Location: time.UTC} }
	}
	cases := []struct {
		name string
		mod  func(*fetch.StandingSpec)
		ok   bool
	}{
		{"target of 200 bytes", func(s *fetch.StandingSpec) { s.Target = strings.Repeat("x", 200) }, true},
		{"target of 201 bytes", func(s *fetch.StandingSpec) { s.Target = strings.Repeat("x", 201) }, false},
		{"empty target", func(s *fetch.StandingSpec) { s.Target = "" }, false},
		{"target not UTF-8", func(s *fetch.StandingSpec) { s.Target = "T\xff1" }, false},
		{"target with a space", func(s *fetch.StandingSpec) { s.Target = "T 1" }, true},
		{"target with U+001F", func(s *fetch.StandingSpec) { s.Target = "T\x1f1" }, false},
		{"target with a tilde", func(s *fetch.StandingSpec) { s.Target = "T~1" }, true},
		{"target with DEL", func(s *fetch.StandingSpec) { s.Target = "T\x7f1" }, false},
		{"target with U+0080", func(s *fetch.StandingSpec) { s.Target = "T\u00801" }, false},
		{"target with U+009F", func(s *fetch.StandingSpec) { s.Target = "T\u009f1" }, false},
		{"target with U+00A0", func(s *fetch.StandingSpec) { s.Target = "T\u00a01" }, true},
		{"trigger of 64 bytes", func(s *fetch.StandingSpec) { s.Trigger = strings.Repeat("t", 64) }, true},
		{"trigger of 65 bytes", func(s *fetch.StandingSpec) { s.Trigger = strings.Repeat("t", 65) }, false},
		{"empty trigger", func(s *fetch.StandingSpec) { s.Trigger = "" }, false},
		{"trigger of a GET", func(s *fetch.StandingSpec) { s.Trigger = "get" }, false},
		{"trigger of a HEAD", func(s *fetch.StandingSpec) { s.Trigger = "head" }, false},
		{"trigger of a PUT", func(s *fetch.StandingSpec) { s.Trigger = "put" }, true},
		{"trigger with no body field", func(s *fetch.StandingSpec) { s.Trigger = "nobody" }, false},
		{"trigger with a relative path", func(s *fetch.StandingSpec) { s.Trigger = "relative" }, false},
		{"trigger with two targets", func(s *fetch.StandingSpec) { s.Trigger = "twice" }, false},
		{"trigger with another placeholder", func(s *fetch.StandingSpec) { s.Trigger = "brace" }, false},
		{"trigger with no target", func(s *fetch.StandingSpec) { s.Trigger = "untargeted" }, false},
		{"one send", func(s *fetch.StandingSpec) { s.MaxSends = 1 }, true},
		{"1000 sends", func(s *fetch.StandingSpec) { s.MaxSends = 1000 }, true},
		{"1001 sends", func(s *fetch.StandingSpec) { s.MaxSends = 1001 }, false},
		{"no sends", func(s *fetch.StandingSpec) { s.MaxSends = 0 }, false},
		{"a minute", func(s *fetch.StandingSpec) { s.Window = time.Minute }, true},
		{"under a minute", func(s *fetch.StandingSpec) { s.Window = time.Minute - 1 }, false},
		{"a day", func(s *fetch.StandingSpec) { s.Window = day }, true},
		{"over a day", func(s *fetch.StandingSpec) { s.Window = day + 1 }, false},
		{"quiet from midnight", quiet(0, time.Hour), true},
		{"quiet from before midnight", quiet(-1, time.Hour), false},
		{"quiet from the day's last instant", quiet(day-1, time.Hour), true},
		{"quiet from the next midnight", quiet(day, time.Hour), false},
		{"quiet to midnight", quiet(time.Hour, 0), true},
		{"quiet to before midnight", quiet(time.Hour, -1), false},
		{"quiet to the day's last instant", quiet(time.Hour, day-1), true},
		{"quiet to the next midnight", quiet(time.Hour, day), false},
		{"quiet for no time", quiet(time.Hour, time.Hour), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "T1", Trigger: "reply", MaxSends: 5, Window: time.Hour, UserGesture: true}
			tc.mod(&spec)
			s, err := r.d.exec.ArmStanding(t.Context(), spec)
			if !tc.ok {
				if !errorsIsCode(err, errcode.BadRequest) {
					t.Fatalf("ArmStanding = %v, want BAD_REQUEST", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ArmStanding = %v, want it armed", err)
			}
			if err := r.d.exec.DisarmStanding(t.Context(), s.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStandingQuietHoursEnds: quiet hours hold from their start, included,
// to their end, excluded, both when they lie within a day and when they
// wrap past midnight. The rig's clock reads 09:00 UTC.
//
// conformance: P3-S17-11
func TestStandingQuietHoursEnds(t *testing.T) {
	cases := []struct {
		name       string
		start, end time.Duration
		quiet      bool
	}{
		{"starting now", 9 * time.Hour, 10 * time.Hour, true},
		{"ending now", 8 * time.Hour, 9 * time.Hour, false},
		{"wrapping, starting now", 9 * time.Hour, 6 * time.Hour, true},
		{"wrapping, ending now", 22 * time.Hour, 9 * time.Hour, false},
		{"wrapping, ending after now", 22 * time.Hour, 9*time.Hour + 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newStandingRig(t)
			arm(t, r, "T1", func(s *fetch.StandingSpec) {
				s.Quiet = &fetch.QuietHours{Start: tc.start, End: tc.end, Location: time.UTC}
			})
			p, code := r.outcome(t, reply("T1", "T1"))
			if p != tc.quiet {
				t.Fatalf("prompted = %v (%q), want %v", p, code, tc.quiet)
			}
			if !tc.quiet && code != "" {
				t.Fatalf("outside quiet hours = %q, want an unattended send", code)
			}
		})
	}
}

// TestStandingWindowEnds: a send counts against the rate cap for exactly
// the window. One window less an instant later it still counts (the next
// send is asked, and is disclosed as in the window); one window later it
// no longer does, and the next send goes unattended.
//
// conformance: P3-S17-09
func TestStandingWindowEnds(t *testing.T) {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&start)
	at := func(d time.Duration) { t := start.Add(d); clock.Store(&t) }
	r := newStandingRig(t, func(c *Config) { c.Now = func() time.Time { return *clock.Load() } })
	arm(t, r, "T1", func(s *fetch.StandingSpec) { s.MaxSends = 1; s.Window = time.Hour })
	if p, code := r.outcome(t, reply("T1", "T1")); p || code != "" {
		t.Fatalf("first send = prompted %v, %q; want it unattended", p, code)
	}
	at(time.Hour - 1)
	if s, _ := r.d.exec.StandingFor("app1", "chat"); s.SendsInWindow != 1 {
		t.Errorf("SendsInWindow an instant before the window ends = %d, want 1", s.SendsInWindow)
	}
	if p, _ := r.outcome(t, reply("T1", "T1")); !p {
		t.Fatal("a send over the cap inside the window went unattended")
	}
	at(time.Hour)
	if s, _ := r.d.exec.StandingFor("app1", "chat"); s.SendsInWindow != 0 {
		t.Errorf("SendsInWindow as the window ends = %d, want 0", s.SendsInWindow)
	}
	if p, code := r.outcome(t, reply("T1", "T1")); p || code != "" {
		t.Fatalf("a send a window after the first = prompted %v, %q; want it unattended", p, code)
	}
}

// TestHostKillSwitchIsItsOwn: a paired host's kill switch disarms the
// standing approvals of the apps it holds and no other; the
// administrator's disarms every one.
//
// conformance: P3-S17-12
func TestHostKillSwitchIsItsOwn(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.ConfirmTimeout = time.Hour
		c.StandingTargets = chatTargets
	})
	owner := ownedApp(t, r.d, "app1")
	other := ownedApp(t, r.d, "other")
	r.connect(t, "app1", chatReq(), map[string]string{"api_key": secretKey})
	arm(t, r, "T1", nil)
	if n := r.d.exec.KillStanding(other); n != 0 {
		t.Fatalf("another host's kill switch = %d, want 0", n)
	}
	if !r.d.exec.StandingArmed("app1", "chat") {
		t.Fatal("another host's kill switch disarmed app1's standing approval")
	}
	if n := r.d.exec.KillStanding(owner); n != 1 || r.d.exec.StandingArmed("app1", "chat") {
		t.Fatalf("the holder's kill switch = %d, armed %v; want 1, disarmed", n, r.d.exec.StandingArmed("app1", "chat"))
	}
	arm(t, r, "T1", nil)
	if n := r.d.exec.KillStanding(t.Context()); n != 1 || r.d.exec.StandingArmed("app1", "chat") {
		t.Fatalf("the administrator's kill switch = %d, want 1", n)
	}
}
