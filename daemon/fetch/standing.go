package fetch

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/ident"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
	"github.com/snug/snugd/internal/names"
)

// Standing approvals (PROVISIONAL): a pre-recorded
// answer to the confirm gate for a narrow scope frozen at arm time — one
// (app, slot), one target, one trigger class — kept in memory only (a
// restart disarms). It is a recorded answer, not a bypass: it is consulted
// inside gate 6, after gates 1–5 passed, and every later gate still runs.
//
// The standing gate is consulted BEFORE the session memory and wraps it:
// it never reads or writes the (app, host, method) session key, which
// cannot tell one thread from another. For a request it returns one of
// three verdicts:
//
//   - no opinion (anything outside the frozen scope, a probe, quiet hours,
//     the rate cap reached, a target source missing): the ordinary confirm
//     decides, exactly as if nothing were armed;
//   - refuse: the request's two target sources disagree — refused with
//     NET_CONFIRM_DENIED and journaled, never approved, never resolved;
//   - approve: the send is recorded against the rate cap, then journaled
//     synchronously as an unattended act, before the request goes on.
//
// Arming is an explicit user gesture on a host surface: ArmStanding is
// reachable only through the API routes served to paired hosts (which
// attest the gesture) and to snugd ctl. No frame and no model path arms.

// StandingTarget is one trigger class a requirement offers for standing
// approvals, and the two independent places a request names its target:
// a path segment and a JSON body field. Config.StandingTargets supplies
// them per requirement (the registry will, later).
type StandingTarget struct {
	// Trigger names the class, e.g. "reply".
	Trigger string
	// Method is the one mutating method the trigger sends with.
	Method string
	// PathPattern is the request path with exactly one segment spelled
	// {target}, e.g. "/v1/threads/{target}/messages"; other segments match
	// exactly (as escaped).
	PathPattern string
	// BodyField is a dotted path of object keys into the JSON body, e.g.
	// "thread_id" or "message.thread"; the value is a string or a number.
	BodyField string
}

// QuietHours is a daily window in which a standing approval answers
// nothing (the ordinary confirm decides). Start and End are offsets from
// midnight in Location (nil: the machine's local time); End before Start
// wraps past midnight.
type QuietHours struct {
	Start, End time.Duration
	Location   *time.Location
}

// StandingSpec is what the user armed.
type StandingSpec struct {
	AppID   string
	Slot    string
	Target  string // the one target, e.g. a thread id (1–200 bytes, no control characters)
	Trigger string // one of the requirement's StandingTargets
	// MaxSends in any rolling Window (1–1000 sends; 1 minute to 24 hours).
	MaxSends int
	Window   time.Duration
	Quiet    *QuietHours // nil: none
	// UserGesture is the caller's attestation that the user armed this
	// with an explicit gesture on a host surface (an
	// authenticated host call or snugd ctl). False is refused.
	UserGesture bool
}

// Standing is an armed standing approval, as disclosed wherever its
// connection is.
type Standing struct {
	ID      string
	Spec    StandingSpec
	ArmedAt time.Time
	// SendsInWindow counts the unattended sends inside the current window.
	SendsInWindow int
}

type standingVerdict int

const (
	StandingNoOpinion standingVerdict = iota
	StandingApprove
	standingRefuse
)

// Bounds of a StandingSpec.
const (
	maxStandingTarget = 200
	maxStandingSends  = 1000
	minStandingWindow = time.Minute
	maxStandingWindow = 24 * time.Hour
)

// standingGate is gate 6's standing approvals: the armed one, the grant
// index it checks arming against and the journal its acts go to.
type StandingGate struct {
	now     func() time.Time
	targets func(*requirement.Requirement) []StandingTarget
	index   Snapshots
	journal *journal.Journal

	mu    sync.Mutex
	armed *armedStanding // v1: at most one per daemon
}

type armedStanding struct {
	id      string
	spec    StandingSpec
	rule    StandingTarget
	armedAt time.Time
	sends   []time.Time // inside the window, oldest first
}

func NewStandingGate(now func() time.Time, targets func(*requirement.Requirement) []StandingTarget, index Snapshots, j *journal.Journal) *StandingGate {
	return &StandingGate{now: now, targets: targets, index: index, journal: j}
}

// ArmStanding arms a standing approval. The caller attests that the user
// made the gesture (API: paired hosts and ctl only). The connection must be
// approved and its requirement must offer spec.Trigger. Errors: BAD_REQUEST
// for a spec out of bounds or an unknown trigger, CONNECTION_NOT_FOUND,
// CONNECTION_NOT_APPROVED, STANDING_ARMED when one is armed already (v1:
// one armed target per daemon; disarm it first).
func (e *Executor) ArmStanding(ctx context.Context, spec StandingSpec) (Standing, error) {
	return e.standing.arm(ctx, spec)
}

func (g *StandingGate) arm(ctx context.Context, spec StandingSpec) (Standing, error) {
	if err := grants.CheckAppID(spec.AppID); err != nil {
		return Standing{}, err
	}
	if err := grants.CheckSlot(spec.Slot); err != nil {
		return Standing{}, err
	}
	if err := spec.check(); err != nil {
		return Standing{}, err
	}
	row := g.index.Snapshot().Apps[spec.AppID].Row(spec.Slot)
	switch {
	case row == nil:
		return Standing{}, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
	case !row.Approved():
		return Standing{}, errcode.New(errcode.ConnectionNotApproved, "only an approved connection can be armed")
	}
	var rule *StandingTarget
	if g.targets != nil {
		for _, t := range g.targets(row.Req) {
			if t.Trigger == spec.Trigger && mutating(t.Method) && t.BodyField != "" && patternOK(t.PathPattern) {
				rule = &t
				break
			}
		}
	}
	if rule == nil {
		return Standing{}, errcode.New(errcode.BadRequest, "the connection offers no such trigger class")
	}
	a := &armedStanding{id: ident.Random(16), spec: spec, rule: *rule, armedAt: g.now()}
	g.mu.Lock()
	if g.armed != nil {
		g.mu.Unlock()
		return Standing{}, errcode.New(errcode.StandingArmed, "a standing approval is already armed: disarm it first")
	}
	g.armed = a
	g.mu.Unlock()
	g.journal.WriteNow(ctx, store.JournalEntry{AppID: spec.AppID, Slot: spec.Slot, Method: rule.Method, Outcome: "standing-armed", Note: "trigger " + scrub.Clip(spec.Trigger, 64)})
	return a.view(g.now()), nil
}

func (s StandingSpec) check() error {
	bad := func(msg string) error { return errcode.New(errcode.BadRequest, msg) }
	switch {
	case !s.UserGesture:
		return bad("arming needs the user's explicit gesture on a host surface")
	case s.Target == "" || len(s.Target) > maxStandingTarget || !utf8.ValidString(s.Target) || hasControl(s.Target):
		return bad("target must be 1-200 bytes without control characters")
	case s.Trigger == "" || len(s.Trigger) > 64:
		return bad("trigger must be 1-64 bytes")
	case s.MaxSends < 1 || s.MaxSends > maxStandingSends:
		return bad("maxSends must be 1-1000")
	case s.Window < minStandingWindow || s.Window > maxStandingWindow:
		return bad("window must be 1 minute to 24 hours")
	}
	if q := s.Quiet; q != nil {
		if q.Start < 0 || q.Start >= 24*time.Hour || q.End < 0 || q.End >= 24*time.Hour || q.Start == q.End {
			return bad("quiet hours must be two different times of day")
		}
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// patternOK reports whether p is an absolute path with exactly one
// {target} segment.
func patternOK(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	n := 0
	for _, seg := range strings.Split(p, "/") {
		if seg == "{target}" {
			n++
		} else if strings.ContainsAny(seg, "{}") {
			return false
		}
	}
	return n == 1
}

// Standings returns the armed standing approvals ctx's caller may see
// (v1: at most one).
func (e *Executor) Standings(ctx context.Context) []Standing {
	out := []Standing{}
	for _, st := range e.standing.list() {
		if e.visible(ctx, st.Spec.AppID) {
			out = append(out, st)
		}
	}
	return out
}

func (g *StandingGate) list() []Standing {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed == nil {
		return []Standing{}
	}
	return []Standing{g.armed.view(g.now())}
}

// StandingFor returns the standing approval armed on (appID, slot), for
// disclosure wherever the connection is disclosed.
func (e *Executor) StandingFor(appID, slot string) (Standing, bool) {
	return e.standing.armedOn(appID, slot)
}

func (g *StandingGate) armedOn(appID, slot string) (Standing, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.armed; a != nil && a.spec.AppID == appID && a.spec.Slot == slot {
		return a.view(g.now()), true
	}
	return Standing{}, false
}

// DisarmStanding disarms standing approval id; NOT_FOUND when none has
// that id that ctx's caller may see.
func (e *Executor) DisarmStanding(ctx context.Context, id string) error {
	for _, st := range e.Standings(ctx) {
		if st.ID == id {
			return e.standing.disarm(id)
		}
	}
	return errcode.New(errcode.NotFound, "no such standing approval")
}

func (g *StandingGate) disarm(id string) error {
	g.mu.Lock()
	a := g.armed
	if a == nil || a.id != id {
		g.mu.Unlock()
		return errcode.New(errcode.NotFound, "no such standing approval")
	}
	g.armed = nil
	g.mu.Unlock()
	g.journal.Add(store.JournalEntry{AppID: a.spec.AppID, Slot: a.spec.Slot, Outcome: "standing-disarmed"})
	return nil
}

// KillStanding is the kill switch: it disarms at once every standing
// approval ctx's caller may see (a host's own apps', the administrator's
// all) and reports how many were armed.
func (e *Executor) KillStanding(ctx context.Context) int {
	if _, ok := hostauth.CallerHost(ctx); !ok {
		return e.standing.kill()
	}
	n := 0
	for _, st := range e.Standings(ctx) {
		if e.standing.disarm(st.ID) == nil {
			n++
		}
	}
	return n
}

func (g *StandingGate) kill() int {
	g.mu.Lock()
	a := g.armed
	g.armed = nil
	g.mu.Unlock()
	if a == nil {
		return 0
	}
	g.journal.Add(store.JournalEntry{AppID: a.spec.AppID, Slot: a.spec.Slot, Outcome: "standing-killed"})
	return 1
}

// disarmSlot disarms a standing approval armed on (appID, slot): a write
// to the connection changes what the frozen scope described.
func (g *StandingGate) DisarmSlot(appID, slot string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.armed; a != nil && a.spec.AppID == appID && a.spec.Slot == slot {
		g.armed = nil
	}
}

func (a *armedStanding) view(now time.Time) Standing {
	n := 0
	for _, t := range a.sends {
		if now.Sub(t) < a.spec.Window {
			n++
		}
	}
	return Standing{ID: a.id, Spec: a.spec, ArmedAt: a.armedAt, SendsInWindow: n}
}

// decide is the standing gate (see the top of this file). asked is the
// confirm the ordinary gate would park: the standing gate decides
// on its slot and body, so a probe (no slot, no body) is never answered.
func (g *StandingGate) Decide(ctx context.Context, f *Fetch, asked Confirm) standingVerdict {
	if asked.Probe || asked.Slot == "" {
		return StandingNoOpinion
	}
	g.mu.Lock()
	a := g.armed
	if a == nil || a.spec.AppID != asked.AppID || a.spec.Slot != asked.Slot || a.rule.Method != asked.Method {
		g.mu.Unlock()
		return StandingNoOpinion
	}
	rule, spec := a.rule, a.spec
	g.mu.Unlock()

	pathTarget, ok := pathSegmentTarget(rule.PathPattern, f.Target)
	if !ok {
		return StandingNoOpinion // another endpoint: not this trigger class
	}
	bodyTarget, ambiguous, ok := BodyFieldTarget(rule.BodyField, asked.Body)
	if !ok && !ambiguous {
		return StandingNoOpinion // one source alone is never trusted
	}
	entry := store.JournalEntry{
		AppID: asked.AppID, Slot: asked.Slot, Host: f.journalHost(), Method: asked.Method,
		Gate: "confirm", Unattended: true,
	}
	if ambiguous || pathTarget != bodyTarget {
		entry.Outcome, entry.Code, entry.Note = "standing-refused", string(errcode.NetConfirmDenied), "target sources disagree"
		g.journal.WriteNow(ctx, entry)
		return standingRefuse
	}
	if pathTarget != spec.Target {
		return StandingNoOpinion // another target: widening needs disarm + re-arm
	}

	g.mu.Lock()
	if g.armed != a { // disarmed or killed meanwhile
		g.mu.Unlock()
		return StandingNoOpinion
	}
	now := g.now()
	if spec.Quiet.contains(now) {
		g.mu.Unlock()
		return StandingNoOpinion
	}
	i := 0
	for i < len(a.sends) && now.Sub(a.sends[i]) >= spec.Window {
		i++
	}
	a.sends = a.sends[i:]
	if len(a.sends) >= spec.MaxSends {
		g.mu.Unlock()
		return StandingNoOpinion
	}
	a.sends = append(a.sends, now) // recorded before the grant answers
	g.mu.Unlock()

	entry.Outcome, entry.Note = "standing-approved", "trigger "+scrub.Clip(spec.Trigger, 64)
	if !g.journal.WriteNow(ctx, entry) {
		return StandingNoOpinion // an act that cannot be journaled is not taken unattended
	}
	return StandingApprove
}

// contains reports whether t falls inside the quiet hours.
func (q *QuietHours) contains(t time.Time) bool {
	if q == nil {
		return false
	}
	loc := q.Location
	if loc == nil {
		loc = time.Local
	}
	t = t.In(loc)
	tod := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	if q.Start < q.End {
		return tod >= q.Start && tod < q.End
	}
	return tod >= q.Start || tod < q.End
}

// pathSegmentTarget matches u's path against pattern and returns the
// unescaped {target} segment.
func pathSegmentTarget(pattern string, u *url.URL) (string, bool) {
	want := strings.Split(pattern, "/")
	got := strings.Split(u.EscapedPath(), "/")
	if len(want) != len(got) {
		return "", false
	}
	target, ok := "", false
	for i, w := range want {
		if w == "{target}" {
			t, err := url.PathUnescape(got[i])
			if err != nil || t == "" {
				return "", false
			}
			target, ok = t, true
		} else if w != got[i] {
			return "", false
		}
	}
	return target, ok
}

// bodyFieldTarget reads the dotted field of a JSON object body as a
// string. ok is false when the body is not one JSON value or the field is
// missing or not a string or number. ambiguous reports a body that spells
// a key on the field's path more than once, exactly or in another case:
// parsers disagree on which of two duplicate keys wins (first or last),
// and many match names case-insensitively, so the provider could read
// another target than the one compared here. That is a disagreement of
// the sources, refused like any other.
func BodyFieldTarget(field, body string) (target string, ambiguous, ok bool) {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	v, found, ambiguous, err := findField(dec, strings.Split(field, "."))
	if err != nil {
		return "", false, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", false, false // trailing data: not one JSON value
	}
	if ambiguous {
		return "", true, false
	}
	if !found {
		return "", false, false
	}
	switch t := v.(type) {
	case string:
		return t, false, t != ""
	case json.Number:
		if _, err := strconv.ParseFloat(t.String(), 64); err == nil {
			return t.String(), false, true
		}
	}
	return "", false, false
}

// findField decodes the next JSON value from dec and follows path into
// it: each step must be an object holding the key exactly once, in one
// spelling (another member that equals it case-insensitively makes the
// path ambiguous). It consumes the whole value either way.
func findField(dec *json.Decoder, path []string) (v any, found, ambiguous bool, err error) {
	if len(path) == 0 {
		err = dec.Decode(&v)
		return v, err == nil, false, err
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, false, false, err
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		if isDelim {
			err = skipRest(dec)
		}
		return nil, false, false, err
	}
	seen := 0
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false, false, err
		}
		key, _ := kt.(string)
		if key != path[0] && !names.FoldsOnto(key, path[0]) {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, false, false, err
			}
			continue
		}
		seen++
		sub, subFound, subAmbiguous, err := findField(dec, path[1:])
		if err != nil {
			return nil, false, false, err
		}
		ambiguous = ambiguous || subAmbiguous || key != path[0]
		if seen == 1 {
			v, found = sub, subFound
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, false, false, err
	}
	if seen > 1 {
		ambiguous = true
	}
	if ambiguous {
		return nil, false, true, nil
	}
	return v, found, false, nil
}

// skipRest consumes the rest of an array or object whose opening
// delimiter dec has just returned.
func skipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// StandingArmed reports whether a standing approval is armed on (appID,
// slot).
func (e *Executor) StandingArmed(appID, slot string) bool {
	_, ok := e.standing.armedOn(appID, slot)
	return ok
}
