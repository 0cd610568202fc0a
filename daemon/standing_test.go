package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/wire"
)

func chatTargets(r *requirement.Requirement) []fetch.StandingTarget {
	if r.Provider.Name != "Chat" {
		return nil
	}
	return []fetch.StandingTarget{{Trigger: "reply", Method: "POST", PathPattern: "/v1/threads/{target}/messages", BodyField: "message.thread_id"}}
}

func chatReq() map[string]any {
	v := apiKeyReq("chat", apiHost)
	v["provider"] = map[string]any{"name": "Chat"}
	return v
}

func reply(thread, bodyThread string) []byte {
	return frame("POST", "https://api.example.com/v1/threads/"+thread+"/messages",
		map[string]any{"body": `{"message":{"thread_id":"` + bodyThread + `","text":"on my way"}}`})
}

func threadBody(pathThread, body string) []byte {
	return frame("POST", "https://api.example.com/v1/threads/"+pathThread+"/messages", map[string]any{"body": body})
}

func newStandingRig(t *testing.T, opts ...func(*Config)) *rig {
	r := newRig(t, append([]func(*Config){func(c *Config) {
		c.ConfirmTimeout = time.Hour
		c.StandingTargets = chatTargets
	}}, opts...)...)
	r.connect(t, "app1", chatReq(), map[string]string{"api_key": secretKey})
	return r
}

func arm(t *testing.T, r *rig, target string, mod func(*fetch.StandingSpec)) fetch.Standing {
	t.Helper()
	spec := fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: target, Trigger: "reply", MaxSends: 5, Window: time.Hour, UserGesture: true}
	if mod != nil {
		mod(&spec)
	}
	s, err := r.d.exec.ArmStanding(t.Context(), spec)
	if err != nil {
		t.Fatalf("ArmStanding: %v", err)
	}
	return s
}

// outcome runs f for app1 and reports whether the user was asked and the
// code; every prompt is denied.
func (r *rig) outcome(t *testing.T, f []byte) (prompted bool, code errcode.Code) {
	t.Helper()
	return r.promptAnswer(t, "app1", f, false, fetch.RememberOnce)
}

// promptAnswer runs f for app and, if the user is asked, answers allow
// with remember. It reports whether the user was asked and the code.
func (r *rig) promptAnswer(t *testing.T, app string, f []byte, allow bool, remember fetch.Remember) (prompted bool, code errcode.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hints := r.d.Hints(ctx) // before the request: its confirm rings
	ch := r.parkedNet(ctx, t, app, f)
	for {
		if cs := r.d.exec.Confirms(context.Background()); len(cs) > 0 {
			r.d.exec.DecideConfirm(cs[0].ID, allow, remember)
			return true, (<-ch).Code
		}
		select {
		case res := <-ch:
			return false, res.Code
		case <-hints:
		case <-ctx.Done():
			t.Fatal("request neither finished nor prompted")
			return false, ""
		}
	}
}

// conformance: P3-S17-02, P3-S17-13, P3-S17-15
func TestArmStanding(t *testing.T) {
	r := newStandingRig(t)
	r.connect(t, "app1", noneReq("plain", "b.example.com"), nil)
	s := arm(t, r, "T1", nil)
	if s.Spec.Slot != "chat" || s.Spec.Target != "T1" || s.Spec.Trigger != "reply" || len(s.ID) != 32 {
		t.Errorf("Standing = %+v, want the frozen (slot, target, trigger)", s)
	}
	if got, ok := r.d.exec.StandingFor("app1", "chat"); !ok || got.ID != s.ID {
		t.Errorf("StandingFor = %v", ok)
	}
	if facts := r.d.records.Facts("app1"); !facts[0].Armed && !facts[1].Armed {
		t.Errorf("facts do not disclose the armed state: %+v", facts)
	}
	for _, tc := range []struct {
		name string
		spec fetch.StandingSpec
		want errcode.Code
	}{
		{"second target", fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "T2", Trigger: "reply", MaxSends: 1, Window: time.Hour, UserGesture: true}, errcode.StandingArmed},
		{"unknown trigger", fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "T2", Trigger: "post", MaxSends: 1, Window: time.Hour, UserGesture: true}, errcode.BadRequest},
		{"no trigger classes", fetch.StandingSpec{AppID: "app1", Slot: "plain", Target: "T2", Trigger: "reply", MaxSends: 1, Window: time.Hour, UserGesture: true}, errcode.BadRequest},
		{"unknown slot", fetch.StandingSpec{AppID: "app1", Slot: "nope", Target: "T2", Trigger: "reply", MaxSends: 1, Window: time.Hour, UserGesture: true}, errcode.ConnectionNotFound},
		{"no rate cap", fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "T2", Trigger: "reply", Window: time.Hour, UserGesture: true}, errcode.BadRequest},
		{"no gesture", fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "T2", Trigger: "reply", MaxSends: 1, Window: time.Hour}, errcode.BadRequest},
		{"control in target", fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "T\n2", Trigger: "reply", MaxSends: 1, Window: time.Hour, UserGesture: true}, errcode.BadRequest},
	} {
		if _, err := r.d.exec.ArmStanding(t.Context(), tc.spec); !errorsIsCode(err, tc.want) {
			t.Errorf("ArmStanding(%s) = %v, want %s", tc.name, err, tc.want)
		}
	}
	if err := r.d.exec.DisarmStanding(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.d.exec.DisarmStanding(context.Background(), s.ID); !errorsIsCode(err, errcode.NotFound) {
		t.Errorf("second disarm = %v, want NOT_FOUND", err)
	}
	s = arm(t, r, "T2", nil)
	if err := r.d.grants.SetCredentials(t.Context(), "app1", "chat", map[string]string{"api_key": "rotated"}); err != nil {
		t.Fatal(err)
	}
	if len(r.d.exec.Standings(context.Background())) != 0 {
		t.Errorf("a write to the connection left %s armed", s.ID)
	}
}

// conformance: P3-S17-03, P3-S17-04, P3-S17-05, P3-S17-06, P3-S17-07, P3-S17-08, P3-S17-14, P3-S17-16
func TestStandingGate(t *testing.T) {
	r := newStandingRig(t)
	arm(t, r, "T1", nil)
	before := len(r.up.requests())
	if p, code := r.outcome(t, reply("T1", "T1")); p || code != "" {
		t.Fatalf("in scope = prompted %v, %q; want an unattended send", p, code)
	}
	if len(r.up.requests()) != before+1 {
		t.Fatal("the unattended send did not reach the upstream")
	}
	cases := []struct {
		name     string
		f        []byte
		prompted bool
		want     errcode.Code
	}{
		{"another target", reply("T2", "T2"), true, errcode.NetConfirmDenied},
		{"sources disagree", reply("T1", "T2"), false, errcode.NetConfirmDenied},
		// Targets compare byte for byte: a provider may treat thread ids
		// case-sensitively, so a case variant is another target.
		{"sources differ in case only", reply("T1", "t1"), false, errcode.NetConfirmDenied},
		{"path names the target, body names another", reply("T2", "T1"), false, errcode.NetConfirmDenied},
		{"body field missing", frame("POST", "https://api.example.com/v1/threads/T1/messages", map[string]any{"body": `{"text":"x"}`}), true, errcode.NetConfirmDenied},
		{"another endpoint", frame("POST", "https://api.example.com/v1/threads/T1/archive", map[string]any{"body": `{"message":{"thread_id":"T1"}}`}), true, errcode.NetConfirmDenied},
		{"another method", frame("PUT", "https://api.example.com/v1/threads/T1/messages", map[string]any{"body": `{"message":{"thread_id":"T1"}}`}), true, errcode.NetConfirmDenied},
		{"off-ceiling host", frame("POST", "https://evil.example.com/v1/threads/T1/messages", map[string]any{"body": `{"message":{"thread_id":"T1"}}`}), false, errcode.NetHostBlocked},
		// A body that names the target twice is two sources in one: a
		// first-wins parser upstream reads T2 where a last-wins one reads T1.
		{"duplicate body field", threadBody("T1", `{"message":{"thread_id":"T2","thread_id":"T1"}}`), false, errcode.NetConfirmDenied},
		{"duplicate parent object", threadBody("T1", `{"message":{"thread_id":"T2"},"message":{"thread_id":"T1"}}`), false, errcode.NetConfirmDenied},
		{"case variant of the field", threadBody("T1", `{"message":{"Thread_Id":"T2","thread_id":"T1"}}`), false, errcode.NetConfirmDenied},
		{"case variant of the parent", threadBody("T1", `{"MESSAGE":{"thread_id":"T2"},"message":{"thread_id":"T1"}}`), false, errcode.NetConfirmDenied},
		{"duplicates off the path are fine", threadBody("T1", `{"message":{"thread_id":"T1","text":"a","text":"b"}}`), false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, code := r.outcome(t, tc.f)
			if p != tc.prompted || code != tc.want {
				t.Fatalf("outcome = prompted %v, %q; want %v, %q", p, code, tc.prompted, tc.want)
			}
		})
	}
	es, err := r.d.records.Journal(t.Context(), journal.JournalQuery{AppID: "app1", UnattendedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var approved, refused int
	for _, e := range es {
		switch e.Outcome {
		case "standing-approved":
			approved++
		case "standing-refused":
			refused++
		}
	}
	if approved != 2 || refused != 7 {
		t.Errorf("journal: %d approved, %d refused unattended acts; want 2, 7", approved, refused)
	}

	// The standing gate is consulted before the session memory: with
	// (app, host, POST) remembered, disagreeing sources are still refused,
	// and the standing approval never wrote that memory itself.
	if r.d.confirms.SessionAllows("app1", apiHost, "POST") {
		t.Fatal("an unattended send wrote the session memory")
	}
	r.d.confirms.Mu.Lock()
	r.d.confirms.Session[fetch.SessionKey{App: "app1", Host: apiHost, Method: "POST"}] = struct{}{}
	r.d.confirms.Mu.Unlock()
	if p, code := r.outcome(t, reply("T1", "T9")); p || code != errcode.NetConfirmDenied {
		t.Fatalf("disagreement with session memory = %v %q, want refused", p, code)
	}
}

// conformance: P3-S17-09, P3-S17-10
func TestStandingRateCap(t *testing.T) {
	r := newStandingRig(t)
	arm(t, r, "T1", func(s *fetch.StandingSpec) { s.MaxSends = 3 })
	r.autoDecide(t, false, fetch.RememberOnce) // whatever falls through is denied
	const n = 12
	var wg sync.WaitGroup
	codes := make(chan errcode.Code, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.d.exec.Net(t.Context(), fetch.NetCall{AppID: "app1", Frame: reply("T1", "T1"), Delivery: fetch.DeliveryApp})
			codes <- res.Code
		}()
	}
	wg.Wait()
	close(codes)
	sent := 0
	for c := range codes {
		if c == "" {
			sent++
		}
	}
	if sent != 3 || len(r.up.requests()) != 3 {
		t.Fatalf("%d concurrent sends: %d auto-approved, %d reached the upstream; want 3", n, sent, len(r.up.requests()))
	}
	if s, _ := r.d.exec.StandingFor("app1", "chat"); s.SendsInWindow != 3 {
		t.Errorf("SendsInWindow = %d, want 3", s.SendsInWindow)
	}
}

// conformance: P3-S17-11, P3-S17-12
func TestStandingQuietHoursAndKill(t *testing.T) {
	r := newStandingRig(t) // the rig's clock reads 09:00 UTC
	arm(t, r, "T1", func(s *fetch.StandingSpec) {
		s.Quiet = &fetch.QuietHours{Start: 8 * time.Hour, End: 10 * time.Hour, Location: time.UTC}
	})
	if p, _ := r.outcome(t, reply("T1", "T1")); !p {
		t.Fatal("a send in quiet hours was auto-approved")
	}
	if n := r.d.exec.KillStanding(context.Background()); n != 1 {
		t.Fatalf("KillStanding = %d, want 1", n)
	}
	arm(t, r, "T1", func(s *fetch.StandingSpec) {
		s.Quiet = &fetch.QuietHours{Start: 22 * time.Hour, End: 6 * time.Hour, Location: time.UTC}
	})
	if p, code := r.outcome(t, reply("T1", "T1")); p || code != "" {
		t.Fatalf("outside quiet hours = %v %q, want auto-approved", p, code)
	}
	r.d.exec.KillStanding(context.Background())
	if p, _ := r.outcome(t, reply("T1", "T1")); !p {
		t.Fatal("a send after the kill switch was auto-approved")
	}
}

// TestStandingNeverAnswersProbes: the probe path's confirm has no
// slot and no body, and the standing gate has no opinion on it.
//
// conformance: P3-X14-29
func TestStandingNeverAnswersProbes(t *testing.T) {
	r := newStandingRig(t)
	arm(t, r, "T1", nil)
	u := mustURL(t, "https://api.example.com/v1/threads/T1/messages")
	f := &fetch.Fetch{Call: fetch.NetCall{AppID: "app1"}, Probe: true, Index: r.d.grants.Snapshot(), Target: u}
	seat := fetch.Confirm{AppID: "app1", Host: apiHost, Method: "POST", URL: u.String(), Probe: true}
	if v := r.d.standing.Decide(t.Context(), f, seat); v != fetch.StandingNoOpinion {
		t.Fatalf("decide(probe) = %d, want no opinion", v)
	}
	seat.Probe, seat.Slot, seat.Body = false, "chat", `{"message":{"thread_id":"T1"}}`
	if v := r.d.standing.Decide(t.Context(), f, seat); v != fetch.StandingApprove {
		t.Fatalf("decide(app send) = %d, want approve", v)
	}

	// Through gate 6 itself: a probe-path request that an armed standing
	// approval and the session memory would both answer for an app send
	// still asks the user, with a seat that carries no slot and no body.
	r.d.confirms.Mu.Lock()
	r.d.confirms.Session[fetch.SessionKey{App: "app1", Host: apiHost, Method: "POST"}] = struct{}{}
	r.d.confirms.Mu.Unlock()
	idx := r.d.grants.Snapshot()
	pf := &fetch.Fetch{Call: fetch.NetCall{AppID: "app1", Delivery: fetch.DeliveryApp}, Probe: true, Index: idx, App: idx.Apps["app1"],
		Grant: idx.Apps["app1"].Row("chat"), Host: apiHost, Target: u,
		Req: wire.NetRequest{Method: "POST", Body: `{"message":{"thread_id":"T1"}}`, HasBody: true}}
	done := make(chan *errcode.Error, 1)
	go func() { done <- r.d.exec.Confirm(t.Context(), pf) }()
	cs := waitConfirms(t, r.d, 1)
	if c := cs[0]; !c.Probe || c.Slot != "" || c.Body != "" || c.Host != apiHost {
		t.Errorf("probe confirm = %+v, want no slot, no body, Probe set", c)
	}
	r.d.exec.DecideConfirm(cs[0].ID, false, fetch.RememberOnce)
	if err := <-done; err == nil || err.Code != errcode.NetConfirmDenied {
		t.Fatalf("probe confirm = %v, want NET_CONFIRM_DENIED", err)
	}
	if s, _ := r.d.exec.StandingFor("app1", "chat"); s.SendsInWindow != 1 {
		t.Errorf("SendsInWindow = %d, want 1: the probe must not count", s.SendsInWindow)
	}
}

// FuzzBodyFieldTarget: the target read from a request body never panics,
// is found only in a valid JSON body, and when found (and not ambiguous)
// is what a plain decode of the body reads at that path.
func FuzzBodyFieldTarget(f *testing.F) {
	for _, s := range [][2]string{
		{"message.thread_id", `{"message":{"thread_id":"T1","text":"x"}}`},
		{"thread_id", `{"thread_id":"T2","thread_id":"T1"}`},
		{"thread_id", `{"Thread_ID":"T1"}`},
		{"a.b", `{"a":[{"b":1}],"a":{"b":2}}`},
		{"id", `{"id":12.5e3} {}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, field, body string) {
		target, ambiguous, ok := fetch.BodyFieldTarget(field, body)
		if ok && ambiguous {
			t.Fatalf("bodyFieldTarget(%q, %q) is both found and ambiguous", field, body)
		}
		if !ok {
			return
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("bodyFieldTarget(%q, %q) = %q from a body that does not decode: %v", field, body, target, err)
		}
		for _, key := range strings.Split(field, ".") {
			m, isMap := v.(map[string]any)
			if !isMap {
				t.Fatalf("bodyFieldTarget(%q, %q) = %q, but the path is not objects", field, body, target)
			}
			v = m[key]
		}
		if got := fmt.Sprint(v); got != target {
			t.Fatalf("bodyFieldTarget(%q, %q) = %q, a plain decode reads %q", field, body, target, got)
		}
	})
}

// A body key that folds onto the target field without being it — under
// Unicode simple folding or the Turkish ı/İ pair, as a .NET or Java
// decoder might read it — makes the target ambiguous, so the standing
// gate refuses it; the exact key alone still names the target.
//
// conformance: P3-S17-08
func TestBodyFieldTargetRefusesFoldedKeys(t *testing.T) {
	for _, tc := range []struct {
		body      string
		ambiguous bool
	}{
		{`{"threadId":"t-bob","text":"hi"}`, false},
		{`{"threadıd":"t-bob","text":"hi"}`, true},                      // dotless ı
		{`{"threadId":"t-bob","threadİd":"t-alice","text":"hi"}`, true}, // dotted İ beside the real key
		{`{"THREADID":"t-bob","text":"hi"}`, true},                      // plain case folding
		{`{"threadId":"t-bob","threadſd":"t-alice"}`, false},            // ſ folds to s, not to i: another key
	} {
		target, ambiguous, ok := fetch.BodyFieldTarget("threadId", tc.body)
		if ambiguous != tc.ambiguous || (!tc.ambiguous && (!ok || target != "t-bob")) {
			t.Errorf("BodyFieldTarget(threadId, %s) = %q, ambiguous %v, found %v; want ambiguous %v", tc.body, target, ambiguous, ok, tc.ambiguous)
		}
	}
}
