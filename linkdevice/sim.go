package linkdevice

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The simulator helper (PROTOCOL.md, "The simulator helper"): a device
// link that completes when someone "scans" the current code by writing its
// payload into the file scan in the session directory.
const (
	simScanFile   = "scan"
	simResultFile = "scan.result"
	simStateFile  = "session.json"
	simPayloadTag = "SNUGSIM1:"
	simScanPoll   = 100 * time.Millisecond
)

// SimOptions tunes the simulator; RunSim reads them from its flags.
type SimOptions struct {
	Rotate    time.Duration // how long a code lives (--rotate, 20s)
	Codes     int           // codes per attempt before it expires (--codes, 5)
	Label     string        // the linked session's label (--label)
	SendLimit int           // sends per thread per minute (--send-limit, 10)
}

// RunSim runs the simulator helper over stdin and stdout until stdin ends,
// shutdown is answered or ctx is done; it logs to stderr. args are its
// flags: --rotate DURATION, --codes N, --label TEXT, --send-limit N.
func RunSim(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("snugd helper sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opt := SimOptions{}
	fs.DurationVar(&opt.Rotate, "rotate", 20*time.Second, "how long each code lives")
	fs.IntVar(&opt.Codes, "codes", 5, "codes per link attempt before it expires")
	fs.StringVar(&opt.Label, "label", "Simulated phone", "the linked session's display label")
	fs.IntVar(&opt.SendLimit, "send-limit", 10, "sends per thread per minute")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if opt.Rotate < 10*time.Millisecond || opt.Codes < 1 || opt.SendLimit < 1 || checkLabel(opt.Label) != nil || opt.Label == "" {
		return errors.New("bad simulator options")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("helper", "sim")
	srv := NewServer(stdin, stdout)
	sim := &simulator{opt: opt, log: log, srv: srv, state: LinkIdle}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer sim.wg.Wait()
	defer sim.stopAttempt()
	return srv.Serve(ctx, sim.handle)
}

type simulator struct {
	opt SimOptions
	log *slog.Logger
	srv *Server
	wg  sync.WaitGroup // the attempt's goroutines

	mu       sync.Mutex
	dir      string // "" before initialize
	state    LinkState
	reason   string
	qr       QR
	codes    int
	pending  string // the minted token, until one poll releases it
	session  *simSession
	sends    map[string][]time.Time
	attempt  context.CancelFunc
	attemptN int
}

// simSession is what session.json holds: never the token, only its hash.
type simSession struct {
	Version   int         `json:"version"`
	TokenHash string      `json:"tokenHash"` // hex SHA-256
	Label     string      `json:"label"`
	LinkedAt  time.Time   `json:"linkedAt"`
	Threads   []simThread `json:"threads"`
}

type simThread struct {
	ID       string       `json:"id"`
	Title    string       `json:"title"`
	Messages []simMessage `json:"messages"`
}

type simMessage struct {
	ID     string    `json:"id"`
	From   string    `json:"from"`
	Text   string    `json:"text"`
	SentAt time.Time `json:"sentAt"`
}

func (s *simulator) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == MethodInitialize {
		return s.initialize(params)
	}
	s.mu.Lock()
	ready := s.dir != ""
	s.mu.Unlock()
	if !ready && method != MethodShutdown {
		return nil, &RPCError{CodeNotInitialized, "initialize first"}
	}
	switch method {
	case MethodLinkStart:
		return s.linkStart()
	case MethodLinkPoll:
		return s.linkPoll()
	case MethodLinkCancel:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.state != LinkLinked {
			s.cancelLocked()
			s.state = LinkIdle
		}
		return nil, nil
	case MethodVerify:
		t, err := ParseToken(params)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.authLocked(t); err != nil {
			return nil, err
		}
		return VerifyResult(Verification{Alive: true, Label: s.session.Label}), nil
	case MethodRequest:
		req, err := ParseRequest(params)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.authLocked(req.Token); err != nil {
			return nil, err
		}
		return ResponseResult(s.serveAPI(req)), nil
	case MethodUnlink:
		return nil, s.unlink()
	case MethodShutdown:
		s.stopAttempt()
		return nil, nil
	}
	return nil, &RPCError{CodeMethodNotFound, "method not found"}
}

func (s *simulator) initialize(params json.RawMessage) (any, error) {
	dir, err := ParseInitialize(params)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(dir) {
		return nil, &RPCError{CodeInvalidParams, "sessionDir must be absolute"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		return nil, &RPCError{CodeInvalidRequest, "already initialized"}
	}
	s.dir = dir
	sess, err := loadSimSession(dir)
	if err != nil {
		s.log.Warn("session state unreadable; starting unlinked", "err", err)
	}
	if sess != nil {
		s.session, s.state = sess, LinkLinked
		s.log.Info("session restored", "label", sess.Label)
	}
	return InitializeResult("snugd-sim", "1"), nil
}

func loadSimSession(dir string) (*simSession, error) {
	raw, err := os.ReadFile(filepath.Join(dir, simStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ss simSession
	if err := json.Unmarshal(raw, &ss); err != nil {
		return nil, errors.New("session.json is malformed")
	}
	if ss.Version != 1 || len(ss.TokenHash) != 64 {
		return nil, errors.New("session.json has an unknown shape")
	}
	return &ss, nil
}

// saveLocked writes session.json atomically, 0600.
func (s *simulator) saveLocked() error {
	raw, err := json.Marshal(s.session)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".session-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.dir, simStateFile))
}

// authLocked checks t against the session's token hash in constant time.
func (s *simulator) authLocked(t Token) error {
	if s.session == nil {
		return &RPCError{CodeNotLinked, "not linked"}
	}
	sum := sha256.Sum256([]byte(t.Reveal()))
	want, err := hex.DecodeString(s.session.TokenHash)
	if err != nil || subtle.ConstantTimeCompare(sum[:], want) != 1 {
		return &RPCError{CodeUnauthorized, "unauthorized"}
	}
	return nil
}

func (s *simulator) linkStart() (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil || s.pending != "" {
		return nil, &RPCError{CodeAlreadyLinked, "already linked"}
	}
	s.cancelLocked()
	ctx, cancel := context.WithCancel(context.Background())
	s.attempt = cancel
	s.attemptN++
	s.state, s.reason, s.codes = LinkQR, "", 0
	os.Remove(filepath.Join(s.dir, simScanFile))
	os.Remove(filepath.Join(s.dir, simResultFile))
	if err := s.rotateLocked(); err != nil {
		return nil, err
	}
	n := s.attemptN
	s.wg.Add(2)
	go s.rotate(ctx, n) // ends with the attempt
	go s.watchScan(ctx, n)
	return PollResult(Poll{State: LinkQR, QR: &s.qr}), nil
}

// rotateLocked mints the next code and announces it.
func (s *simulator) rotateLocked() error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return &RPCError{CodeInternal, "no randomness"}
	}
	s.codes++
	s.qr = QR{Payload: simPayloadTag + strings.ToUpper(hex.EncodeToString(b[:])), ExpiresAt: time.Now().Add(s.opt.Rotate).UTC()}
	s.srv.Notify(NotifyQR, s.qr)
	return nil
}

func (s *simulator) rotate(ctx context.Context, n int) {
	defer s.wg.Done()
	t := time.NewTicker(s.opt.Rotate)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.attemptN != n || s.state != LinkQR {
			s.mu.Unlock()
			return
		}
		if s.codes >= s.opt.Codes {
			s.state, s.qr = LinkExpired, QR{}
			s.srv.Notify(NotifyLinkStatus, LinkStatus{State: LinkExpired})
			s.mu.Unlock()
			return
		}
		s.rotateLocked()
		s.mu.Unlock()
	}
}

// watchScan is the side channel: it polls the session directory for the
// file scan and treats its content as the payload a phone read.
func (s *simulator) watchScan(ctx context.Context, n int) {
	defer s.wg.Done()
	t := time.NewTicker(simScanPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.attemptN != n || s.state != LinkQR {
			s.mu.Unlock()
			return
		}
		path := filepath.Join(s.dir, simScanFile)
		raw, err := readSmall(path, 4096)
		if err != nil || !scanComplete(raw) {
			s.mu.Unlock() // absent, or still being written
			continue
		}
		os.Remove(path)
		result := s.scanLocked(strings.TrimSpace(string(raw)))
		os.WriteFile(filepath.Join(s.dir, simResultFile), []byte(result+"\n"), 0o600)
		done := s.state != LinkQR
		s.mu.Unlock()
		if done {
			return
		}
	}
}

// scanComplete reports whether a scan file's content is whole: it ends
// in a newline, or is as long as a payload.
func scanComplete(raw []byte) bool {
	return len(raw) > 0 && (raw[len(raw)-1] == '\n' || len(raw) >= len(simPayloadTag)+32)
}

func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// scanLocked judges one scanned payload and links on the current code.
func (s *simulator) scanLocked(payload string) string {
	if time.Now().After(s.qr.ExpiresAt) {
		return "rejected: the code has expired"
	}
	if subtle.ConstantTimeCompare([]byte(payload), []byte(s.qr.Payload)) != 1 {
		return "rejected: not the current code"
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		s.state, s.reason = LinkFailed, "the device could not mint a token"
		return "rejected: no randomness"
	}
	s.pending = base64.RawURLEncoding.EncodeToString(b[:])
	s.state, s.qr = LinkLinked, QR{}
	s.srv.Notify(NotifyLinkStatus, LinkStatus{State: LinkLinked, Label: s.opt.Label})
	s.log.Info("linked", "label", s.opt.Label)
	return "linked"
}

func (s *simulator) linkPoll() (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.pending != "":
		// The answer that observes completion: save the hash, then
		// release the token, once.
		sum := sha256.Sum256([]byte(s.pending))
		s.session = &simSession{Version: 1, TokenHash: hex.EncodeToString(sum[:]), Label: s.opt.Label, LinkedAt: time.Now().UTC(), Threads: seedThreads()}
		if err := s.saveLocked(); err != nil {
			s.session, s.pending = nil, ""
			s.state, s.reason = LinkFailed, "the device could not save the session"
			s.log.Error("save session", "err", err)
			return PollResult(Poll{State: LinkFailed, Reason: s.reason}), nil
		}
		tok := Token{s.pending}
		s.pending = ""
		return PollResult(Poll{State: LinkLinked, Label: s.session.Label, Token: tok}), nil
	case s.session != nil:
		return PollResult(Poll{State: LinkLinked, Label: s.session.Label}), nil
	case s.state == LinkQR:
		q := s.qr
		return PollResult(Poll{State: LinkQR, QR: &q}), nil
	}
	return PollResult(Poll{State: s.state, Reason: s.reason}), nil
}

func (s *simulator) unlink() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelLocked()
	s.session, s.pending, s.state, s.sends = nil, "", LinkIdle, nil
	if err := os.Remove(filepath.Join(s.dir, simStateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Error("remove session", "err", err)
		return &RPCError{CodeInternal, "could not forget the session"}
	}
	s.log.Info("unlinked")
	return nil
}

func (s *simulator) cancelLocked() {
	if s.attempt != nil {
		s.attempt()
		s.attempt = nil
	}
	s.attemptN++
}

func (s *simulator) stopAttempt() {
	s.mu.Lock()
	s.cancelLocked()
	s.mu.Unlock()
}

func seedThreads() []simThread {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	return []simThread{
		{ID: "t-alice", Title: "Alice", Messages: []simMessage{{ID: "m1", From: "Alice", Text: "Are we still on for lunch?", SentAt: at}}},
		{ID: "t-bob", Title: "Bob", Messages: []simMessage{{ID: "m2", From: "Bob", Text: "Sent you the slides.", SentAt: at.Add(time.Hour)}}},
		{ID: "t-family", Title: "Family", Messages: []simMessage{{ID: "m3", From: "Mum", Text: "Dinner on Sunday?", SentAt: at.Add(2 * time.Hour)}}},
	}
}
