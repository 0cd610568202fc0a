package linkdevice

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/scrub"
)

// Supervision policy (DESIGN.md, "Supervision").
const (
	// maxTries restarts, waiting 1, 2, 4, 8 and 16 seconds; one more exit
	// before healthyAfter fails the session for good.
	maxTries = 5
	// healthyAfter of running resets the restart budget.
	healthyAfter = 60 * time.Second
	// exitGrace is how long a helper has to exit after shutdown (and after
	// its input closes) before it is killed.
	exitGrace = 5 * time.Second
	// drainGrace is how long the reader may drain what an exited helper
	// wrote before its streams are closed.
	drainGrace = time.Second
	// maxSessions bounds the helper processes one snugd runs at once.
	maxSessions = 64
)

// backoff returns the wait before restart number try (0-based).
func backoff(try int) time.Duration { return time.Second << try }

// Supervisor errors a caller branches on.
var (
	ErrUnknownHelper = errors.New("no helper is registered under that id")
	ErrStopped       = errors.New("the helper supervisor is not running")
	ErrHelperDown    = errors.New("the helper is restarting")
	ErrHelperFailed  = errors.New("the helper failed and is not restarted")
	ErrTooMany       = errors.New("too many helper sessions are running")
)

// Spec is one entry of the helper table: the bare file name of the
// executable in the install directory and its fixed arguments. Both come
// from main's literal table, never from an app or a requirement.
type Spec struct {
	Executable string
	Args       []string
	// ConnectTCP are the TCP ports a confined helper may connect to (with
	// DNS over UDP port 53 when any); none, like the simulator, leaves it
	// no network at all where the kernel can narrow it (Landlock ABI 4).
	ConnectTCP []uint16
}

// Config configures a Supervisor. Helpers, Dir and StateDir are required
// when any helper is registered.
type Config struct {
	// Helpers maps a helper id (one DNS label: its symbolic host is
	// <id>.sidecar.invalid) to its executable.
	Helpers map[string]Spec
	// Dir is the one absolute directory executables are looked up in:
	// snugd's install directory or the directory config.json names.
	Dir string
	// StateDir is the absolute directory holding every session directory
	// (created 0700): <StateDir>/<helperId>/<key>, see SessionDir.
	StateDir string
	// Env is a helper's whole environment (e.g. PATH). Nil: empty; a
	// helper never inherits snugd's environment.
	Env []string
	// Logger receives supervision events and the helpers' stderr lines.
	// Nil discards.
	Logger *slog.Logger
	// Scrub is applied to every stderr line before it is logged, after the
	// session's own tokens are removed: the daemon passes its credential
	// scrub. Nil: tokens only.
	Scrub func(string) string
	// OnEvent receives link notifications and state changes. It is called
	// from the supervisor's goroutines and must return quickly. Nil drops.
	OnEvent func(Event)
	// Starter starts processes. Nil: ExecStarter.
	Starter Starter
	// Confine is the command that starts a helper confined (on Linux:
	// Landlock, no_new_privs, and a per-session subreaper that ends every
	// descendant with the session; see RunConfine): snugd's own absolute
	// executable path followed by "helper", ConfineCommand. Nil starts
	// helpers unconfined, and Confinement says so.
	Confine []string
	// ReapOrphans makes this process the child subreaper of its
	// descendants (Linux: PR_SET_CHILD_SUBREAPER, a process-wide
	// attribute, set by New) and has the Supervisor end every process
	// reparented to it: what outlived a confined helper's own subreaper
	// (killed outright) or an unconfined helper's exit. Only a program
	// whose children are all helpers may set it (snugd: the daemon starts
	// no other process), since an orphan cannot be told from another
	// child but by being no live helper.
	ReapOrphans bool
}

// SessionKey names one helper session: a helper serving one (app, slot).
// Each key is its own process with its own session directory. Stage
// tells a slot's live session from the replacement being linked beside
// it and from the one a replacement retired (Promote).
type SessionKey struct {
	HelperID string
	AppID    string
	Slot     string
	Stage    Stage
}

// A Stage says which of a slot's session directories a SessionKey names.
// A relink links StageNew beside the live session, which keeps serving
// requests until Promote swaps the two; the live session becomes
// StageOld, for Unlink to retire.
type Stage string

const (
	StageLive Stage = ""    // the session requests go to
	StageNew  Stage = "new" // a replacement being linked
	StageOld  Stage = "old" // the session a replacement retired
)

// At returns k's key at stage st.
func (k SessionKey) At(st Stage) SessionKey {
	k.Stage = st
	return k
}

// ErrSwapping refuses a call while a slot's sessions are being swapped
// (Promote, Restore): it lasts as long as two renames.
var ErrSwapping = errors.New("the helper session is being replaced")

// State is a session's supervision state.
type State string

const (
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateBackoff  State = "backoff" // exited unexpectedly; restarting after a wait
	StateFailed   State = "failed"  // out of restarts; a new StartLink retries
	StateStopped  State = "stopped"
)

// Status is one session's supervision snapshot for snugd ctl status.
// LastError is a fixed sentence of this package, never helper output.
type Status struct {
	SessionKey
	State     State
	Restarts  int
	LastError string
	// Confinement is what the session's last start reached.
	Confinement Confinement
}

// EventKind says what an Event reports.
type EventKind int

const (
	EventQR         EventKind = iota + 1 // a new code (QR)
	EventLinkStatus                      // the link state moved (Link)
	EventState                           // the session's supervision state moved (State)
)

// Event is one thing that happened to a session.
type Event struct {
	SessionKey
	Kind  EventKind
	QR    QR
	Link  LinkStatus
	State State
}

// Supervisor starts helper sessions on demand, restarts them with bounded
// backoff, and routes calls to them. Its methods are safe for concurrent
// use. A helper, however broken or hostile, can make a call fail but never
// block one past its method's timeout, and never panic the caller.
type Supervisor struct {
	cfg     Config
	log     *slog.Logger
	starter Starter

	subMu sync.RWMutex
	subs  []func(Event) // Subscribe's receivers

	// ctx is the sessions' lifetime: made by New so calls that arrive
	// before Run starts are served, cancelled when Run's ctx ends.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	running  bool
	stopping bool
	lastConf Confinement // what the latest helper start reached
	started  bool        // a helper has started

	// procMu orders starts (read-locked) against orphan sweeps; pids holds
	// the pids of the helper processes started and not yet reaped.
	procMu   sync.RWMutex
	pids     sync.Map // int → true
	sessions map[SessionKey]*session
	// swapping holds the live keys whose directories Promote or Restore
	// is renaming: no session of that slot starts meanwhile.
	swapping map[SessionKey]bool
	wg       sync.WaitGroup // one per keeper goroutine
}

type session struct {
	key  SessionKey
	spec Spec
	dir  string
	stop chan struct{} // closed for an intentional stop (unlink)

	mu        sync.Mutex
	state     State
	restarts  int
	tries     int
	lastError string
	client    *Client
	changed   chan struct{} // closed and replaced on every state change
	tokens    []string      // token values seen, scrubbed from stderr
	stopped   bool
	conf      Confinement // what the last start reached
}

var helperIDRule = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// New checks cfg and returns a Supervisor. Nothing starts before Run.
// Errors: a helper id that is not one DNS label, an executable that is
// not a bare file name, or a Dir or StateDir that is not absolute.
func New(cfg Config) (*Supervisor, error) {
	for id, spec := range cfg.Helpers {
		if !helperIDRule.MatchString(id) {
			return nil, fmt.Errorf("helper id %q: want one lowercase DNS label", id)
		}
		if err := checkExecutable(spec.Executable); err != nil {
			return nil, fmt.Errorf("helper %s: %w", id, err)
		}
	}
	if len(cfg.Confine) > 0 && !filepath.IsAbs(cfg.Confine[0]) {
		return nil, errors.New("the confining command must be an absolute path")
	}
	cfg.Confine = slices.Clone(cfg.Confine)
	if cfg.ReapOrphans {
		if err := becomeSubreaper(); err != nil {
			return nil, fmt.Errorf("become the helpers' subreaper: %w", err)
		}
	}
	if len(cfg.Helpers) > 0 {
		if !filepath.IsAbs(cfg.Dir) {
			return nil, errors.New("helper directory must be an absolute path")
		}
		if !filepath.IsAbs(cfg.StateDir) {
			return nil, errors.New("helper state directory must be an absolute path")
		}
	}
	cfg.Helpers = cloneHelpers(cfg.Helpers)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := cfg.Starter
	if st == nil {
		st = ExecStarter{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Supervisor{cfg: cfg, log: log.With("component", "linkdevice"), starter: st, ctx: ctx, cancel: cancel, sessions: map[SessionKey]*session{}, swapping: map[SessionKey]bool{}}, nil
}

func cloneHelpers(m map[string]Spec) map[string]Spec {
	out := make(map[string]Spec, len(m))
	for k, v := range m {
		out[k] = Spec{Executable: v.Executable, Args: slices.Clone(v.Args), ConnectTCP: slices.Clone(v.ConnectTCP)}
	}
	return out
}

// checkExecutable refuses anything but a bare file name.
func checkExecutable(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return errors.New("executable must be a file name")
	case strings.ContainsAny(name, `/\:`) || strings.ContainsRune(name, 0):
		return errors.New("executable must be a bare file name, not a path")
	case strings.HasPrefix(name, "-"):
		return errors.New("executable must not start with -")
	}
	return nil
}

// Helpers reports the registered helper ids, sorted.
func (s *Supervisor) Helpers() []string {
	ids := make([]string, 0, len(s.cfg.Helpers))
	for id := range s.cfg.Helpers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Run supervises helpers until ctx is done, then shuts every session down
// (shutdown, then input closed, then a kill after 5 seconds each) and
// returns nil once all have exited. Sessions start on demand from New on
// (so a call that races Run's start is served); after Run has returned
// every call is refused with ErrStopped. Run must be called once.
func (s *Supervisor) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running || s.stopping {
		s.mu.Unlock()
		return errors.New("supervisor already running")
	}
	s.running = true
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// SessionDir returns the session directory of k:
// <StateDir>/<helperId>/<first 32 hex digits of SHA-256(appId NUL slot)>,
// with ".new" or ".old" after it for those stages. The hash keeps app
// ids of any spelling out of file names.
func (s *Supervisor) SessionDir(k SessionKey) string { return SessionDirOf(s.cfg.StateDir, k) }

// SessionDirOf is SessionDir for a supervisor whose StateDir is stateDir:
// for a caller that has none, such as snugd ctl demo scan, which writes
// the simulator's scan file beside the daemon it talks to.
func SessionDirOf(stateDir string, k SessionKey) string {
	sum := sha256.Sum256([]byte(k.AppID + "\x00" + k.Slot))
	name := hex.EncodeToString(sum[:16])
	switch k.Stage {
	case StageLive:
	case StageNew, StageOld:
		name += "." + string(k.Stage)
	default:
		name += ".invalid" // checkKey refuses such a key before any use
	}
	return filepath.Join(stateDir, k.HelperID, name)
}

// checkKey refuses a key of no registered helper or of an unknown stage.
func (s *Supervisor) checkKey(k SessionKey) (Spec, error) {
	spec, ok := s.cfg.Helpers[k.HelperID]
	if !ok {
		return Spec{}, ErrUnknownHelper
	}
	switch k.Stage {
	case StageLive, StageNew, StageOld:
		return spec, nil
	}
	return Spec{}, fmt.Errorf("session stage %q: want live, new or old", k.Stage)
}

// Status returns every session's snapshot, sorted by key.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	out := make([]Status, 0, len(list))
	for _, ss := range list {
		ss.mu.Lock()
		out = append(out, Status{SessionKey: ss.key, State: ss.state, Restarts: ss.restarts, LastError: ss.lastError, Confinement: ss.conf})
		ss.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Status) int {
		return strings.Compare(a.HelperID+"\x00"+a.AppID+"\x00"+a.Slot, b.HelperID+"\x00"+b.AppID+"\x00"+b.Slot)
	})
	return out
}

// Confinement reports how helpers are confined: what the latest helper
// start reached, or before any has started what one would (Probe, when
// a confining command is configured; none without). The daemon's status
// report and snugd ctl doctor show it.
func (s *Supervisor) Confinement() Confinement {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.started:
		return s.lastConf
	case len(s.cfg.Confine) > 0:
		return Probe()
	}
	return Confinement{}
}

// StateIdle is a helper with no session (HelperStatus only).
const StateIdle State = "idle"

// HelperSummary is one registered helper's line in snugd ctl status: its
// sessions folded into the worst state among them (failed, backoff,
// starting, running, stopped; idle with none), their restarts summed, and
// the last error of a session in that state.
type HelperSummary struct {
	HelperID  string
	State     State
	Sessions  int
	Restarts  int
	LastError string
}

// HelperStatus summarises every registered helper, sorted by id.
func (s *Supervisor) HelperStatus() []HelperSummary {
	rank := map[State]int{StateFailed: 5, StateBackoff: 4, StateStarting: 3, StateRunning: 2, StateStopped: 1}
	sessions := s.Status()
	out := make([]HelperSummary, 0, len(s.cfg.Helpers))
	for _, id := range s.Helpers() {
		h := HelperSummary{HelperID: id, State: StateIdle}
		for _, st := range sessions {
			if st.HelperID != id {
				continue
			}
			h.Sessions++
			h.Restarts += st.Restarts
			if rank[st.State] > rank[h.State] {
				h.State, h.LastError = st.State, st.LastError
			}
		}
		out = append(out, h)
	}
	return out
}

// acquire returns the running session of k, starting it on demand and
// waiting while it starts. A session in backoff or failed refuses at once.
func (s *Supervisor) acquire(ctx context.Context, k SessionKey, retry bool) (*session, *Client, error) {
	spec, err := s.checkKey(k)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil, nil, ErrStopped
	}
	if s.swapping[k.At(StageLive)] {
		s.mu.Unlock()
		return nil, nil, ErrSwapping
	}
	ss := s.sessions[k]
	if ss != nil && retry {
		ss.mu.Lock()
		failed := ss.state == StateFailed
		ss.mu.Unlock()
		if failed {
			delete(s.sessions, k) // a user's new attempt earns a new budget
			ss = nil
		}
	}
	if ss == nil && s.live() >= maxSessions {
		s.mu.Unlock()
		return nil, nil, ErrTooMany
	}
	if ss == nil {
		ss = &session{key: k, spec: spec, dir: s.SessionDir(k), stop: make(chan struct{}), state: StateStarting, changed: make(chan struct{})}
		s.sessions[k] = ss
		s.wg.Add(1)
		go s.keep(s.ctx, ss) // ends when Run's ctx is done, on stop, or when failed
	}
	s.mu.Unlock()
	for {
		ss.mu.Lock()
		st, c, ch := ss.state, ss.client, ss.changed
		ss.mu.Unlock()
		switch st {
		case StateRunning:
			return ss, c, nil
		case StateBackoff, StateStopped:
			return nil, nil, ErrHelperDown
		case StateFailed:
			return nil, nil, ErrHelperFailed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// live counts the sessions that hold or may soon hold a process; s.mu is
// held.
func (s *Supervisor) live() int {
	n := 0
	for _, ss := range s.sessions {
		ss.mu.Lock()
		if ss.state != StateFailed && ss.state != StateStopped {
			n++
		}
		ss.mu.Unlock()
	}
	return n
}

func (s *Supervisor) setState(ss *session, st State, c *Client) {
	ss.mu.Lock()
	changed := ss.state != st
	ss.state, ss.client = st, c
	close(ss.changed)
	ss.changed = make(chan struct{})
	ss.mu.Unlock()
	if changed {
		s.emit(Event{SessionKey: ss.key, Kind: EventState, State: st})
	}
}

func (s *Supervisor) emit(e Event) {
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(e)
	}
	s.subMu.RLock()
	subs := s.subs
	s.subMu.RUnlock()
	for _, f := range subs {
		f(e)
	}
}

// Subscribe adds f to the receivers of the supervisor's events, beside
// Config.OnEvent; f is called as OnEvent is. Call it before Run.
func (s *Supervisor) Subscribe(f func(Event)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.subs = append(s.subs, f)
}

// keep runs ss's helper and restarts it per the supervision policy.
func (s *Supervisor) keep(ctx context.Context, ss *session) {
	defer s.wg.Done()
	for {
		ran, reason, intentional := s.runOnce(ctx, ss)
		if intentional || ctx.Err() != nil {
			s.setState(ss, StateStopped, nil)
			return
		}
		ss.mu.Lock()
		ss.lastError = reason
		if ran >= healthyAfter {
			ss.tries = 0
		}
		try := ss.tries
		out := try >= maxTries
		if !out {
			ss.tries++
			ss.restarts++
		}
		ss.mu.Unlock()
		if out {
			s.log.Error("helper failed; not restarting", "helper", ss.key.HelperID, "app_id", ss.key.AppID, "slot", ss.key.Slot, "reason", reason)
			s.setState(ss, StateFailed, nil)
			return
		}
		wait := backoff(try)
		s.log.Warn("helper stopped; restarting", "helper", ss.key.HelperID, "app_id", ss.key.AppID, "slot", ss.key.Slot, "reason", reason, "wait", wait)
		s.setState(ss, StateBackoff, nil)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.setState(ss, StateStopped, nil)
			return
		case <-ss.stop:
			t.Stop()
			s.setState(ss, StateStopped, nil)
			return
		}
	}
}

// runOnce starts ss's helper, initializes it and waits for its session to
// end. It returns how long the helper ran healthy, a fixed sentence saying
// why it ended, and whether the end was asked for (shutdown or stop).
func (s *Supervisor) runOnce(ctx context.Context, ss *session) (time.Duration, string, bool) {
	s.setState(ss, StateStarting, nil)
	if err := ensurePrivateDir(s.cfg.StateDir); err != nil {
		s.log.Error("helper state directory", "err", err)
		return 0, "the session directory could not be made private", false
	}
	if err := ensurePrivateDir(filepath.Dir(ss.dir)); err != nil {
		s.log.Error("helper state directory", "err", err)
		return 0, "the session directory could not be made private", false
	}
	if ss.key.Stage == StageLive {
		s.recoverSwap(ss.key)
	}
	if err := ensurePrivateDir(ss.dir); err != nil {
		s.log.Error("helper session directory", "err", err)
		return 0, "the session directory could not be made private", false
	}
	path, why := s.resolve(ss.spec)
	if why != "" {
		return 0, why, false
	}
	s.procMu.RLock() // a sweep must not take the new child for an orphan
	proc, err := s.starter.Start(ctx, Command{
		Path: path, Args: slices.Clone(ss.spec.Args), Dir: ss.dir, Env: slices.Clone(s.cfg.Env),
		Confine: s.cfg.Confine, StateDir: s.cfg.StateDir, ConnectTCP: slices.Clone(ss.spec.ConnectTCP),
	})
	pid := 0
	if p, ok := proc.(interface{ Pid() int }); ok && err == nil {
		pid = p.Pid()
		s.pids.Store(pid, true)
	}
	s.procMu.RUnlock()
	if err != nil {
		s.log.Error("helper did not start", "helper", ss.key.HelperID, "err", err)
		return 0, "the helper could not be started", false
	}
	var conf Confinement
	if c, ok := proc.(interface{ Confinement() Confinement }); ok {
		conf = c.Confinement()
	}
	ss.mu.Lock()
	ss.conf = conf
	ss.mu.Unlock()
	s.mu.Lock()
	s.lastConf, s.started = conf, true
	s.mu.Unlock()
	exited := make(chan struct{})
	go func() { // ends when the process exits
		proc.Wait()
		if pid != 0 {
			s.pids.Delete(pid)
			s.sweepOrphans()
		}
		close(exited)
	}()
	logged := make(chan struct{})
	go func() { s.forwardStderr(ss, proc.Stderr()); close(logged) }() // ends when stderr closes
	client := NewClient(proc.Stdout(), proc.Stdin(), ClientOptions{Notify: func(n Notification) { s.notified(ss, n) }})
	ran := make(chan struct{})
	go func() { client.Run(context.Background()); close(ran) }() // ends when the client is closed or the streams end
	// finish runs after the process has exited.
	finish := func() {
		client.Close()
		select { // its last stderr lines (a crash report) are worth the wait
		case <-logged:
		case <-time.After(drainGrace):
		}
		proc.Close()
		<-ran
		<-logged
	}

	ictx, cancel := context.WithCancel(ctx)
	go func() { // ends with initialize
		select {
		case <-ss.stop:
			cancel()
		case <-ictx.Done():
		}
	}()
	_, err = client.Initialize(ictx, ss.dir)
	cancel()
	if err != nil {
		proc.Kill()
		<-exited
		finish()
		if ctx.Err() != nil {
			return 0, "", true
		}
		select {
		case <-ss.stop:
			return 0, "", true
		default:
		}
		return 0, initReason(err), false
	}
	started := time.Now()
	s.setState(ss, StateRunning, client)
	s.log.Info("helper running", "helper", ss.key.HelperID, "app_id", ss.key.AppID, "slot", ss.key.Slot)

	var reason string
	intentional := false
	select {
	case <-exited:
		select { // let the reader take what the helper wrote before it exited
		case <-client.Done():
		case <-time.After(drainGrace):
		}
		reason = "the helper exited"
	case <-client.Done():
		reason = sessionReason(client.Err())
		if client.Err() == nil { // end of output: most often the exit itself
			select {
			case <-exited:
				reason = "the helper exited"
			case <-time.After(drainGrace):
			}
		}
		proc.Kill()
		<-exited
	case <-ctx.Done():
		intentional = true
		s.shutdown(client, proc, exited)
	case <-ss.stop:
		intentional = true
		s.shutdown(client, proc, exited)
	}
	healthy := time.Since(started)
	finish()
	return healthy, reason, intentional
}

// shutdown asks the helper to exit, closes its input, and kills it if it
// has not exited exitGrace later.
func (s *Supervisor) shutdown(c *Client, p Process, exited <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout(MethodShutdown))
	c.Shutdown(ctx)
	cancel()
	p.Stdin().Close()
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		p.Kill()
		<-exited
	}
}

func initReason(err error) string {
	var re *RPCError
	switch {
	case errors.As(err, &re) && re.Code == CodeUnsupportedVersion:
		return "the helper speaks no protocol version snugd offers"
	case errors.As(err, &re):
		return "the helper refused initialize"
	case errors.Is(err, ErrSessionClosed):
		var pe *ProtocolError
		if errors.As(err, &pe) || errors.Is(err, ErrHung) {
			return sessionReason(err)
		}
		return "the helper exited" // its output ended before the answer
	}
	return "the helper did not initialize"
}

// sessionReason is the fixed sentence for why a client session ended.
func sessionReason(err error) string {
	var pe *ProtocolError
	switch {
	case errors.As(err, &pe):
		return "the helper broke the protocol: " + pe.Reason
	case errors.Is(err, ErrHung):
		return "the helper did not answer in time"
	case err == nil:
		return "the helper closed its output"
	}
	return "the helper's streams failed"
}

// resolve finds spec's executable in the one install directory. The
// reason is a fixed sentence; "" when found.
func (s *Supervisor) resolve(spec Spec) (string, string) {
	if checkExecutable(spec.Executable) != nil {
		return "", "the helper executable name is not a bare file name"
	}
	p := filepath.Join(s.cfg.Dir, spec.Executable)
	fi, err := os.Stat(p)
	if err != nil {
		return "", "the helper executable is missing"
	}
	if !fi.Mode().IsRegular() {
		return "", "the helper executable is not a regular file"
	}
	if runtime.GOOS != "windows" {
		if fi.Mode().Perm()&0o022 != 0 {
			return "", "the helper executable is writable by others"
		}
		if fi.Mode().Perm()&0o111 == 0 {
			return "", "the helper executable is not executable"
		}
	}
	return p, ""
}

// ensurePrivateDir makes dir (not a symlink) with mode 0700.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// stopSession ends k's session without a restart and waits for its keeper
// to see it; the next acquire starts a fresh one.
func (s *Supervisor) stopSession(k SessionKey) {
	s.mu.Lock()
	ss := s.sessions[k]
	if ss != nil {
		delete(s.sessions, k)
	}
	s.mu.Unlock()
	if ss == nil {
		return
	}
	ss.mu.Lock()
	if !ss.stopped {
		ss.stopped = true
		close(ss.stop)
	}
	ss.mu.Unlock()
	for {
		ss.mu.Lock()
		st, ch := ss.state, ss.changed
		ss.mu.Unlock()
		if st == StateStopped || st == StateFailed {
			return
		}
		<-ch
	}
}

func (s *Supervisor) notified(ss *session, n Notification) {
	switch n.Method {
	case NotifyQR:
		s.emit(Event{SessionKey: ss.key, Kind: EventQR, QR: n.QR})
	case NotifyLinkStatus:
		s.emit(Event{SessionKey: ss.key, Kind: EventLinkStatus, Link: n.Status})
	}
}

// remember adds a token to ss's scrub set (at most 8, newest kept).
func (ss *session) remember(t Token) {
	if t.IsZero() {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if slices.Contains(ss.tokens, t.v) {
		return
	}
	ss.tokens = append(ss.tokens, t.v)
	if len(ss.tokens) > 8 {
		ss.tokens = ss.tokens[1:]
	}
}

// scrub removes ss's tokens, in every spelling tokenSpellings lists,
// and the caller's credentials from helper text.
func (s *Supervisor) scrub(ss *session, text string) string {
	ss.mu.Lock()
	toks := slices.Clone(ss.tokens)
	ss.mu.Unlock()
	var set scrub.Set
	for _, t := range toks {
		set.Add(tokenSpellings(t)...)
	}
	text = set.Apply(text)
	if s.cfg.Scrub != nil {
		text = s.cfg.Scrub(text)
	}
	return text
}

// scrubErr scrubs the helper's own text inside err.
func (s *Supervisor) scrubErr(ss *session, err error) error {
	var re *RPCError
	if errors.As(err, &re) {
		return &RPCError{Code: re.Code, Message: s.scrub(ss, re.Message)}
	}
	return err
}

// Do sends req through k's session (gate 6a). The token rides in req.
func (s *Supervisor) Do(ctx context.Context, k SessionKey, req Request) (Response, error) {
	ss, c, err := s.acquire(ctx, k, false)
	if err != nil {
		return Response{}, err
	}
	ss.remember(req.Token)
	resp, err := c.Do(ctx, req)
	return resp, s.scrubErr(ss, err)
}

// StartLink begins a device-link attempt on k's session, starting the
// helper if needed; a failed session gets a fresh restart budget (this is
// a user's gesture). Codes arrive as EventQR.
func (s *Supervisor) StartLink(ctx context.Context, k SessionKey) error {
	ss, c, err := s.acquire(ctx, k, true)
	if err != nil {
		return err
	}
	return s.scrubErr(ss, c.StartLink(ctx))
}

// PollLink polls k's link state. The one answer that observes completion
// carries the token; the caller must keep it, no later answer has it. So
// that a caller who gives up cannot drop that answer on the floor, the
// poll itself ignores ctx's cancellation once sent (its own 5 s timeout
// still bounds it).
func (s *Supervisor) PollLink(ctx context.Context, k SessionKey) (Poll, error) {
	ss, c, err := s.acquire(ctx, k, false)
	if err != nil {
		return Poll{}, err
	}
	p, err := c.PollLink(context.WithoutCancel(ctx))
	ss.remember(p.Token)
	return p, s.scrubErr(ss, err)
}

// CancelLink abandons k's link attempt.
func (s *Supervisor) CancelLink(ctx context.Context, k SessionKey) error {
	ss, c, err := s.acquire(ctx, k, false)
	if err != nil {
		return err
	}
	return s.scrubErr(ss, c.CancelLink(ctx))
}

// Verify runs the verify probe on k's session with token.
func (s *Supervisor) Verify(ctx context.Context, k SessionKey, token Token) (Verification, error) {
	ss, c, err := s.acquire(ctx, k, false)
	if err != nil {
		return Verification{}, err
	}
	ss.remember(token)
	v, err := c.Verify(ctx, token)
	return v, s.scrubErr(ss, err)
}

// Unlink ends k's device session: the helper forgets it, its process is
// shut down, and its session directory is removed even when the helper
// could not be reached (revocation must not depend on a helper). The error
// says whether the helper itself confirmed.
func (s *Supervisor) Unlink(ctx context.Context, k SessionKey) error {
	if _, err := s.checkKey(k); err != nil {
		return err
	}
	ss, c, err := s.acquire(ctx, k, true)
	if err == nil {
		err = s.scrubErr(ss, c.Unlink(ctx))
	}
	s.stopSession(k)
	if rerr := os.RemoveAll(s.SessionDir(k)); rerr != nil && err == nil {
		err = fmt.Errorf("remove session directory: %w", rerr)
	}
	return err
}

// Promote makes the staged session of k's slot (StageNew, linked beside
// the live one, answering token) the live session, so that a relink
// never drops the working link before the new one exists: every session
// of the slot stops, the live directory is renamed to the StageOld
// directory and the staged one to the live directory. Before the first
// rename it writes the slot's swap record (the hash of token), which
// says the swap is undecided until FinishSwap (after the caller's
// commit) or Restore (after a failed one) removes it; a crash anywhere
// in between is decided by FinishSwap at the next start. While the
// renames run, calls for the slot answer ErrSwapping.
func (s *Supervisor) Promote(k SessionKey, token Token) error {
	live := k.At(StageLive)
	if _, err := s.checkKey(live); err != nil {
		return err
	}
	if token.IsZero() {
		return errors.New("promote a session: no token")
	}
	if !s.beginSwap(live) {
		return ErrSwapping
	}
	defer s.endSwap(live)
	liveDir, newDir, oldDir := s.SessionDir(live), s.SessionDir(k.At(StageNew)), s.SessionDir(k.At(StageOld))
	if _, err := os.Lstat(newDir); err != nil {
		return fmt.Errorf("promote a session: no staged session: %w", err)
	}
	if err := os.RemoveAll(oldDir); err != nil {
		return fmt.Errorf("promote a session: clear the retired directory: %w", err)
	}
	// A live directory that is gone stands as an empty one, so that a
	// StageOld directory always means the first rename happened.
	if err := ensurePrivateDir(liveDir); err != nil {
		return fmt.Errorf("promote a session: %w", err)
	}
	if err := s.writeSwap(live, token); err != nil {
		return fmt.Errorf("promote a session: %w", err)
	}
	if err := os.Rename(liveDir, oldDir); err != nil {
		s.removeSwap(live)
		return fmt.Errorf("promote a session: retire the live directory: %w", err)
	}
	if err := os.Rename(newDir, liveDir); err != nil {
		if rerr := os.Rename(oldDir, liveDir); rerr != nil {
			s.log.Error("put a live session back", "helper", k.HelperID, "app_id", k.AppID, "slot", k.Slot, "err", rerr)
			return fmt.Errorf("promote a session: %w", err) // the record stays for FinishSwap
		}
		s.removeSwap(live)
		return fmt.Errorf("promote a session: %w", err)
	}
	syncDir(filepath.Dir(liveDir))
	return nil
}

// Restore undoes a Promote whose commit failed: the live directory goes
// back to StageNew (for Unlink to retire), the StageOld directory becomes
// the live one again, and the swap record goes.
func (s *Supervisor) Restore(k SessionKey) error {
	live := k.At(StageLive)
	if _, err := s.checkKey(live); err != nil {
		return err
	}
	if !s.beginSwap(live) {
		return ErrSwapping
	}
	defer s.endSwap(live)
	liveDir, newDir, oldDir := s.SessionDir(live), s.SessionDir(k.At(StageNew)), s.SessionDir(k.At(StageOld))
	if err := os.RemoveAll(newDir); err != nil {
		return fmt.Errorf("restore a session: clear the staged directory: %w", err)
	}
	if err := os.Rename(liveDir, newDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore a session: move the replacement aside: %w", err)
	}
	if err := os.Rename(oldDir, liveDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore a session: %w", err)
	}
	syncDir(filepath.Dir(liveDir))
	return s.removeSwap(live)
}

// beginSwap marks live's slot as swapping and stops its sessions; it
// reports false when another swap of the slot runs.
func (s *Supervisor) beginSwap(live SessionKey) bool {
	s.mu.Lock()
	if s.swapping[live] {
		s.mu.Unlock()
		return false
	}
	s.swapping[live] = true
	s.mu.Unlock()
	for _, st := range []Stage{StageNew, StageLive, StageOld} {
		s.stopSession(live.At(st))
	}
	return true
}

func (s *Supervisor) endSwap(live SessionKey) {
	s.mu.Lock()
	delete(s.swapping, live)
	s.mu.Unlock()
}

// recoverSwap finishes what a crash cut short between Promote's or
// Restore's two renames: with no live directory but a retired one, the
// retired one is the last committed link and becomes live again (no
// commit follows a Promote cut short, so FinishSwap would decide the
// same; it still removes the swap record and the staged session).
func (s *Supervisor) recoverSwap(live SessionKey) {
	liveDir, oldDir := s.SessionDir(live), s.SessionDir(live.At(StageOld))
	if _, err := os.Lstat(liveDir); !errors.Is(err, os.ErrNotExist) {
		return
	}
	if fi, err := os.Lstat(oldDir); err != nil || !fi.IsDir() {
		return
	}
	if err := os.Rename(oldDir, liveDir); err != nil {
		s.log.Error("put a live session back", "helper", live.HelperID, "app_id", live.AppID, "slot", live.Slot, "err", err)
		return
	}
	s.log.Warn("a session swap was cut short; the previous session is live again", "helper", live.HelperID, "app_id", live.AppID, "slot", live.Slot)
}

// syncDir flushes dir's entries (the renames) to disk, best effort.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// HasSession reports whether k's session directory holds anything: a
// helper keeps its device session there and nowhere else, so a missing or
// empty directory means the session is gone (a helper that answers "not
// linked" with files left is not judged by this). It starts nothing.
func (s *Supervisor) HasSession(k SessionKey) bool {
	if _, err := s.checkKey(k); err != nil {
		return false
	}
	f, err := os.Open(s.SessionDir(k))
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}
