package linkdevice

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// simSessionT is one in-process simulator run driven through a Client.
type simSessionT struct {
	c     *Client
	dir   string
	notes chan Notification
	done  chan error
	once  sync.Once
}

// startSim runs RunSim over pipes in dir with args.
func startSim(t *testing.T, dir string, args ...string) *simSessionT {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &simSessionT{dir: dir, notes: make(chan Notification, 256), done: make(chan error, 1)}
	go func() { s.done <- RunSim(context.Background(), args, inR, outW, io.Discard); outW.Close() }()
	s.c = NewClient(outR, inW, ClientOptions{Notify: func(n Notification) {
		select {
		case s.notes <- n:
		default:
		}
	}})
	go s.c.Run(context.Background())
	if _, err := s.c.Initialize(t.Context(), dir); err != nil {
		t.Fatalf("Initialize = %v", err)
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *simSessionT) stop(t *testing.T) {
	s.once.Do(func() {
		s.c.Shutdown(context.Background())
		s.c.Close()
		if err := <-s.done; err != nil {
			t.Errorf("RunSim = %v", err)
		}
	})
}

func (s *simSessionT) link(t *testing.T) Token {
	t.Helper()
	if err := s.c.StartLink(t.Context()); err != nil {
		t.Fatalf("StartLink = %v", err)
	}
	p, err := s.c.PollLink(t.Context())
	if err != nil || p.QR == nil || !strings.HasPrefix(p.QR.Payload, "SNUGSIM1:") {
		t.Fatalf("PollLink = %+v, %v", p, err)
	}
	if got := scan(t, s.dir, p.QR.Payload); got != "linked" {
		t.Fatalf("scan = %q", got)
	}
	p, err = s.c.PollLink(t.Context())
	if err != nil || p.Token.IsZero() {
		t.Fatalf("PollLink = %+v, %v; want the token", p, err)
	}
	return p.Token
}

// The token: 32 random bytes, released once, only its hash kept; a
// restart on the same directory keeps the link.
// conformance: P3-C12.12-17
func TestSimTokenOnceAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := startSim(t, dir, "--rotate=5s")
	if _, err := s.c.Do(t.Context(), Request{Method: "GET", PathAndQuery: "/v1/threads", Token: testToken}); !errors.Is(err, ErrNotLinked) {
		t.Errorf("Do before the link = %v, want ErrNotLinked", err)
	}
	tok := s.link(t)
	if len(tok.Reveal()) != 43 {
		t.Errorf("token has %d characters, want 43 (256 bits)", len(tok.Reveal()))
	}
	for range 3 {
		if p, err := s.c.PollLink(t.Context()); err != nil || p.State != LinkLinked || !p.Token.IsZero() {
			t.Errorf("later PollLink = %+v, %v; want linked without the token", p, err)
		}
	}
	if err := s.c.StartLink(t.Context()); !errors.Is(err, ErrAlreadyLinked) {
		t.Errorf("StartLink while linked = %v, want ErrAlreadyLinked", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, simStateFile))
	if err != nil || strings.Contains(string(raw), tok.Reveal()) {
		t.Errorf("session.json = %v; it must exist without the token", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, simStateFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("session.json mode = %v, want 0600", fi.Mode().Perm())
	}
	s.stop(t)

	s2 := startSim(t, dir)
	if v, err := s2.c.Verify(t.Context(), tok); err != nil || !v.Alive {
		t.Errorf("Verify after restart = %+v, %v", v, err)
	}
	if p, err := s2.c.PollLink(t.Context()); err != nil || p.State != LinkLinked || !p.Token.IsZero() {
		t.Errorf("PollLink after restart = %+v, %v; want linked, no token", p, err)
	}
	if _, err := s2.c.Verify(t.Context(), testToken); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Verify(wrong token) = %v, want ErrUnauthorized", err)
	}
	if err := s2.c.Unlink(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.c.Verify(t.Context(), tok); !errors.Is(err, ErrNotLinked) {
		t.Errorf("Verify after unlink = %v, want ErrNotLinked", err)
	}
}

// Codes rotate; an old or wrong code is rejected; the attempt expires
// after its codes; cancel returns to idle.
func TestSimRotationAndExpiry(t *testing.T) {
	dir := t.TempDir()
	s := startSim(t, dir, "--rotate=150ms", "--codes=3")
	if err := s.c.StartLink(t.Context()); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for len(codes) < 3 {
		n := <-s.notes
		if n.Method == NotifyQR {
			if n.QR.ExpiresAt.Before(time.Now().Add(-time.Second)) {
				t.Errorf("code expires at %v, in the past", n.QR.ExpiresAt)
			}
			codes = append(codes, n.QR.Payload)
		}
	}
	if codes[0] == codes[1] || codes[1] == codes[2] {
		t.Errorf("codes did not rotate: %q", codes)
	}
	if got := scan(t, dir, codes[0]); !strings.HasPrefix(got, "rejected") {
		t.Errorf("scan(old code) = %q, want rejected", got)
	}
	for n := range s.notes {
		if n.Method == NotifyLinkStatus {
			if n.Status.State != LinkExpired {
				t.Errorf("status = %+v, want expired", n.Status)
			}
			break
		}
	}
	if p, err := s.c.PollLink(t.Context()); err != nil || p.State != LinkExpired {
		t.Errorf("PollLink = %+v, %v; want expired", p, err)
	}

	// A wrong code, then cancel, on a simulator whose codes live the
	// default 20 s: with 150 ms codes a scan that a loaded machine answers
	// late would meet an expired attempt instead of the wrong code.
	dir2 := t.TempDir()
	s2 := startSim(t, dir2)
	if err := s2.c.StartLink(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, dir2, "SNUGSIM1:00000000000000000000000000000000"); got != "rejected: not the current code" {
		t.Errorf("scan(wrong) = %q", got)
	}
	if err := s2.c.CancelLink(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p, err := s2.c.PollLink(t.Context()); err != nil || p.State != LinkIdle {
		t.Errorf("PollLink after cancel = %+v, %v; want idle", p, err)
	}
}

// The messaging API and its errors.
func TestSimAPI(t *testing.T) {
	s := startSim(t, t.TempDir(), "--send-limit=2")
	tok := s.link(t)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		has                      string
	}{
		{"threads", "GET", "/v1/threads", "", 200, `"id":"t-alice"`},
		{"messages", "GET", "/v1/threads/t-bob/messages", "", 200, `"text":"Sent you the slides."`},
		{"unknown thread", "GET", "/v1/threads/t-zed/messages", "", 404, `"not_found"`},
		{"unknown path", "GET", "/v2/threads", "", 404, `"not_found"`},
		{"wrong method", "DELETE", "/v1/threads/t-bob/messages", "", 405, `"method_not_allowed"`},
		{"send", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":"hi"}`, 201, `"text":"hi"`},
		{"path and body disagree", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-alice","text":"hi"}`, 400, "does not match the path"},
		{"no threadId", "POST", "/v1/threads/t-bob/messages", `{"text":"hi"}`, 400, "required"},
		{"unknown field", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":"hi","to":"x"}`, 400, "bad_request"},
		{"not JSON", "POST", "/v1/threads/t-bob/messages", `hi`, 400, "bad_request"},
		{"two objects", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":"a"}{}`, 400, "bad_request"},
		{"empty text", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":" "}`, 400, "text must be"},
		{"too long", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":"` + strings.Repeat("a", 4097) + `"}`, 400, "text must be"},
		{"too large", "POST", "/v1/threads/t-bob/messages", strings.Repeat(" ", 17<<10), 413, "too_large"},
		{"second send", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":"again"}`, 201, `"again"`},
		{"rate limited", "POST", "/v1/threads/t-bob/messages", `{"threadId":"t-bob","text":"third"}`, 429, "rate_limited"},
		{"other thread unaffected", "POST", "/v1/threads/t-alice/messages", `{"threadId":"t-alice","text":"yo"}`, 201, `"yo"`},
	} {
		resp, err := s.c.Do(t.Context(), Request{Method: tc.method, PathAndQuery: tc.path, Body: []byte(tc.body), Token: tok})
		if err != nil {
			t.Errorf("%s: Do = %v", tc.name, err)
			continue
		}
		if resp.Status != tc.status || !strings.Contains(string(resp.Body), tc.has) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, resp.Status, resp.Body, tc.status, tc.has)
		}
		if resp.Header.Get("Content-Type") != "application/json" || !json.Valid(resp.Body) {
			t.Errorf("%s: not a JSON answer", tc.name)
		}
		if tc.status == 429 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tc.name)
		}
	}
}

func TestSimFlags(t *testing.T) {
	for _, args := range [][]string{{"--rotate=0s"}, {"--codes=0"}, {"--label="}, {"--label=a\x1bb"}, {"extra"}, {"--nope"}} {
		if err := RunSim(t.Context(), args, strings.NewReader(""), io.Discard, io.Discard); err == nil {
			t.Errorf("RunSim(%q) = nil, want an error", args)
		}
	}
	if err := RunSim(t.Context(), nil, strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Errorf("RunSim at end of input = %v, want nil", err)
	}
}

// The standing target rule's two sources are where the simulator reads
// them: a send built from SimSendPath and SimTargetField goes out.
func TestSimStandingTargetRule(t *testing.T) {
	s := &simulator{opt: SimOptions{SendLimit: 10}, session: &simSession{Version: 1, Threads: seedThreads()}, dir: t.TempDir()}
	body, _ := json.Marshal(map[string]string{SimTargetField: "t-family", "text": "on my way"})
	resp := s.serveAPI(Request{Method: SimSendMethod, PathAndQuery: strings.Replace(SimSendPath, "{target}", "t-family", 1), Body: body})
	if resp.Status != 201 {
		t.Errorf("send by the rule = %d %s, want 201", resp.Status, resp.Body)
	}
}
