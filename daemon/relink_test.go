package daemon

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/linkdevice"
)

// readThreads makes one request through app1/chat's link, as an app
// does, and fails the test unless it is served.
func (r *simRig) readThreads(t *testing.T, when string) {
	t.Helper()
	res, resp := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/threads", nil))
	if res.Code != "" || resp.Status != http.StatusOK {
		t.Fatalf("a request %s = %q %d %s; want served through the link", when, res.Code, resp.Status, resp.Body)
	}
}

// acts returns the journal's acts of app1/chat named act.
func (r *simRig) acts(t *testing.T, act string) []journal.JournalEntry {
	t.Helper()
	j, err := r.d.records.Journal(t.Context(), journal.JournalQuery{AppID: "app1", Kind: "acts"})
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.JournalEntry
	for _, e := range j {
		if e.Act == act && e.Slot == "chat" {
			out = append(out, e)
		}
	}
	return out
}

// killStaged SIGKILLs the helper process serving the staged session.
func (r *simRig) killStaged(t *testing.T) {
	t.Helper()
	dir := r.sup.SessionDir(r.key.At(linkdevice.StageNew))
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			p, err := os.FindProcess(atoi(t, e.Name()))
			if err == nil {
				err = p.Kill()
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Skip("no /proc to find the staged helper by (not Linux)")
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("pid %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestRelinkNeverLosesTheLink: re-linking a linked slot needs replace
// (ALREADY_CONNECTED otherwise, nothing touched); a cancelled, an expired
// and a failed relink (its helper killed mid-link) each leave the old
// link serving requests with the old token; a relink that completes
// swaps the new device in, retires the old session, and is journaled;
// a revoke journals the unlink.
func TestRelinkNeverLosesTheLink(t *testing.T) {
	r := newSimRig(t, "--codes=1", "--rotate=4s")
	if f := r.link(t); f.State != pairing.FlowLinked {
		t.Fatalf("first link = %+v\n%s", f, r.logs.String())
	}
	secrets, _ := r.state(t)
	oldTok := string(secrets["helper_token"])
	r.readThreads(t, "after the first link")
	staged := r.key.At(linkdevice.StageNew)

	_, err := r.d.devices.StartLink(t.Context(), "app1", "chat", false)
	if !isCode(err, errcode.AlreadyConnected) || !strings.Contains(err.Error(), "app1/chat is already linked, since ") {
		t.Fatalf("StartLink without replace on a linked slot = %v, want ALREADY_CONNECTED naming the slot and since when", err)
	}
	r.readThreads(t, "after a refused relink")

	tokenKept := func(t *testing.T) {
		t.Helper()
		if s, st := r.state(t); string(s["helper_token"]) != oldTok || st.LinkVerifiedAt == nil {
			t.Fatalf("the stored link changed: state %+v", st)
		}
		if _, err := os.Stat(r.sup.SessionDir(staged)); !os.IsNotExist(err) {
			t.Errorf("the staged session directory is left: %v", err)
		}
		if n := len(r.acts(t, journal.ActRelink)); n != 0 {
			t.Errorf("%d relink acts journaled for a relink that did not complete", n)
		}
	}
	startRelink := func(t *testing.T) pairing.Flow {
		t.Helper()
		f, err := r.d.devices.StartLink(t.Context(), "app1", "chat", true)
		if err != nil {
			t.Fatalf("StartLink with replace = %v", err)
		}
		f = r.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.QR != "" || f.State.Ended() })
		if f.State != pairing.FlowQR {
			t.Fatalf("relink flow = %+v, want a code", f)
		}
		r.readThreads(t, "while a relink shows its code")
		return f
	}

	t.Run("cancelled", func(t *testing.T) {
		f := startRelink(t)
		if _, err := r.d.devices.CancelLink(t.Context(), f.ID); err != nil {
			t.Fatal(err)
		}
		waitGone(t, r.sup.SessionDir(staged))
		r.readThreads(t, "after a cancelled relink")
		tokenKept(t)
	})

	t.Run("expired", func(t *testing.T) {
		f := startRelink(t)
		f = r.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State.Ended() })
		if f.State != pairing.FlowExpired {
			t.Fatalf("unscanned relink = %s %q, want expired", f.State, f.Message)
		}
		waitGone(t, r.sup.SessionDir(staged))
		r.readThreads(t, "after an expired relink")
		tokenKept(t)
	})

	t.Run("failed", func(t *testing.T) {
		f := startRelink(t)
		r.killStaged(t)
		f = r.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State.Ended() })
		if f.State != pairing.FlowFailed {
			t.Fatalf("relink whose helper died = %s %q, want failed", f.State, f.Message)
		}
		waitGone(t, r.sup.SessionDir(staged))
		r.readThreads(t, "after a failed relink")
		tokenKept(t)
	})

	t.Run("replaced", func(t *testing.T) {
		// Right after a cancelled relink, as a person who changed their
		// mind: the cancelled one's retirement must not take the new one.
		f0 := startRelink(t)
		if _, err := r.d.devices.CancelLink(t.Context(), f0.ID); err != nil {
			t.Fatal(err)
		}
		f := startRelink(t)
		if err := os.WriteFile(filepath.Join(r.sup.SessionDir(staged), "scan"), []byte(f.QR), 0o600); err != nil {
			t.Fatal(err)
		}
		f = r.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State.Ended() })
		if f.State != pairing.FlowLinked {
			t.Fatalf("relink = %s %q, want linked\n%s", f.State, f.Message, r.logs.String())
		}
		s, _ := r.state(t)
		if newTok := string(s["helper_token"]); newTok == oldTok || len(newTok) < 43 {
			t.Fatalf("token after the relink: changed %v, %d chars", newTok != oldTok, len(newTok))
		}
		r.readThreads(t, "through the new link")
		for _, st := range []linkdevice.Stage{linkdevice.StageNew, linkdevice.StageOld} {
			if _, err := os.Stat(r.sup.SessionDir(r.key.At(st))); !os.IsNotExist(err) {
				t.Errorf("session directory %q after the relink: %v, want retired", st, err)
			}
		}
		if got := r.acts(t, journal.ActRelink); len(got) != 1 || !strings.Contains(got[0].Note, "by the administrator") {
			t.Fatalf("relink acts = %+v, want one, by the administrator", got)
		}
		if strings.Contains(r.logs.String(), string(s["helper_token"])) || strings.Contains(r.logs.String(), oldTok) {
			t.Fatal("a helper token reached the log")
		}
	})

	t.Run("revoke journals the unlink", func(t *testing.T) {
		if _, err := r.d.grants.Revoke(t.Context(), "app1", "chat"); err != nil {
			t.Fatal(err)
		}
		if got := r.acts(t, journal.ActUnlink); len(got) != 1 {
			t.Fatalf("unlink acts = %+v, want one", got)
		}
	})
}

// waitGone waits until dir no longer exists (a helper's unlink runs after
// its flow ended).
func waitGone(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
	}
	t.Fatalf("%s still exists", dir)
}

// TestLinkLostIsSaid: when the helper's session is gone (its directory
// wiped) the next request fails NET_AUTH_FAILED and the connection is
// marked error with the sentence naming pair link, no longer connected;
// linking again clears it.
func TestLinkLostIsSaid(t *testing.T) {
	r := newSimRig(t)
	if f := r.link(t); f.State != pairing.FlowLinked {
		t.Fatalf("link = %+v", f)
	}
	r.readThreads(t, "after the link")
	if err := r.sup.Unlink(t.Context(), r.key); err != nil {
		t.Fatal(err)
	}
	res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/threads", nil))
	if res.Code != errcode.NetAuthFailed {
		t.Fatalf("a request after the session was lost = %q, want NET_AUTH_FAILED", res.Code)
	}
	_, st := r.state(t)
	if st.Status == "connected" || st.LastError != pairing.LinkLostMessage("app1", "chat") || st.LastError != "link lost: run snugd ctl pair link app1 chat" {
		t.Fatalf("state after a lost link = %+v, want error saying the link is lost", st)
	}
	// Not working any more: linking again needs no replace, and clears it.
	if f := r.link(t); f.State != pairing.FlowLinked {
		t.Fatalf("link again = %+v", f)
	}
	if _, st := r.state(t); st.Status != "connected" || st.LastError != "" {
		t.Fatalf("state after linking again = %+v", st)
	}
	r.readThreads(t, "after linking again")
}

// restart closes the daemon and its helpers and opens a new daemon and
// supervisor on the same data and state directories: a start after a
// crash, seeing the disk as the crash left it.
func (r *simRig) restart(t *testing.T) {
	t.Helper()
	r.d.Close()
	sup, err := linkdevice.New(r.supCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.cfg
	cfg.Helpers = sup
	d, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New after the crash: %v", err)
	}
	r.target.Store(d)
	run(t, d)
	t.Cleanup(func() { d.Close() })
	r.d, r.sup = d, sup
}

// linkStaged links a relink's staged session straight through the
// supervisor, as a relink flow does up to its verify, and returns its
// token.
func (r *simRig) linkStaged(t *testing.T) linkdevice.Token {
	t.Helper()
	staged := r.key.At(linkdevice.StageNew)
	if err := r.sup.StartLink(t.Context(), staged); err != nil {
		t.Fatalf("StartLink(staged) = %v", err)
	}
	scanned := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		p, err := r.sup.PollLink(t.Context(), staged)
		switch {
		case err != nil:
			t.Fatalf("PollLink(staged) = %v", err)
		case !p.Token.IsZero():
			return p.Token
		case p.QR != nil && !scanned:
			if err := os.WriteFile(filepath.Join(r.sup.SessionDir(staged), "scan"), []byte(p.QR.Payload), 0o600); err != nil {
				t.Fatal(err)
			}
			scanned = true
		}
	}
	t.Fatal("the staged session never linked")
	return linkdevice.Token{}
}

// TestRelinkCrashKeepsTheCommittedLink: a crash (kill -9) at any point of
// a relink, from Promote's first step to the end of its settling, never
// loses the link. After the restart exactly the committed link works:
// the old one when the new token's commit had not happened, the new one
// when it had; the other token is refused, nothing is left staged or
// retired, and the journal gains nothing (a restored old link is logged).
// Each case builds the disk and store a crash leaves from a real Promote
// (and, past the commit point, the commit's own write).
func TestRelinkCrashKeepsTheCommittedLink(t *testing.T) {
	r := newSimRig(t)
	if f := r.link(t); f.State != pairing.FlowLinked {
		t.Fatalf("first link = %+v\n%s", f, r.logs.String())
	}
	secrets, _ := r.state(t)
	oldTok, err := linkdevice.NewToken(string(secrets["helper_token"]))
	if err != nil {
		t.Fatal(err)
	}
	top, live, staged, old := t, r.key, r.key.At(linkdevice.StageNew), r.key.At(linkdevice.StageOld)
	rename := func(from, to linkdevice.SessionKey) {
		t.Helper()
		if err := os.Rename(r.sup.SessionDir(from), r.sup.SessionDir(to)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// crash turns what a whole Promote leaves into what the crash
		// leaves.
		crash        func()
		committed    bool // the new token's commit went through
		wantRestored bool
	}{
		{name: "before Promote's first rename", crash: func() { rename(live, staged); rename(old, live) }},
		{name: "between Promote's renames", crash: func() { rename(live, staged) }, wantRestored: true},
		{name: "after Promote, before the commit", crash: func() {}, wantRestored: true},
		{name: "after the commit, before the old session is retired", crash: func() {}, committed: true},
		{name: "after the old session is retired, before the swap is marked done", crash: func() { os.RemoveAll(r.sup.SessionDir(old)) }, committed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newTok := r.linkStaged(t)
			if err := r.sup.Promote(staged, newTok); err != nil {
				t.Fatalf("Promote = %v", err)
			}
			tc.crash()
			want, other := oldTok, newTok
			if tc.committed {
				want, other = newTok, oldTok
				err := r.d.store.Update(t.Context(), func(tx *store.Tx) error {
					return grants.WriteVerified(tx, "app1", "chat", "helper_token", store.Secret(newTok.Reveal()), func(s *grants.ConnState, at int64) { s.LinkVerifiedAt = &at })
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			const restoredLine = "the previous link is live again"
			before := strings.Count(r.logs.String(), restoredLine)
			r.restart(top) // the new daemon outlives the case

			r.readThreads(t, "after the restart")
			if s, st := r.state(t); string(s["helper_token"]) != want.Reveal() || st.Status != grants.ConnConnected {
				t.Fatalf("stored link after the restart: the committed token %v, state %+v", string(s["helper_token"]) == want.Reveal(), st)
			}
			_, err := r.sup.Do(t.Context(), live, linkdevice.Request{Method: "GET", PathAndQuery: "/v1/threads", Token: other})
			if !errors.Is(err, linkdevice.ErrUnauthorized) {
				t.Fatalf("the uncommitted token after the restart = %v, want ErrUnauthorized", err)
			}
			for _, k := range []linkdevice.SessionKey{staged, old} {
				if _, err := os.Stat(r.sup.SessionDir(k)); !os.IsNotExist(err) {
					t.Errorf("session directory %q after the restart: %v, want retired", k.Stage, err)
				}
			}
			if got := r.sup.Swaps(); len(got) != 0 {
				t.Errorf("unsettled swaps after the restart: %v", got)
			}
			if got := strings.Count(r.logs.String(), restoredLine) > before; got != tc.wantRestored {
				t.Errorf("log says the previous link is live again: %v, want %v\n%s", got, tc.wantRestored, r.logs.String())
			}
			if n := len(r.acts(t, journal.ActRelink)); n != 0 {
				t.Errorf("%d relink acts journaled by the restart", n)
			}
			oldTok = want
		})
	}
}
