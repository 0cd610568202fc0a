package linkdevice

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// threadsWith reads the simulator's thread list through k with tok.
func threadsWith(t *testing.T, s *Supervisor, k SessionKey, tok Token) error {
	t.Helper()
	resp, err := s.Do(t.Context(), k, Request{Method: "GET", PathAndQuery: "/v1/threads", Token: tok})
	if err == nil && resp.Status != 200 {
		t.Fatalf("threads = %d %s", resp.Status, resp.Body)
	}
	return err
}

// A relink links a staged session beside the live one: the live session
// keeps answering its token while the replacement links, Promote swaps
// the two directories (the old token refused, the new one served),
// Restore undoes it, Unlink retires the staged or the old session, and
// a swap cut short by a crash is finished by the next start.
func TestRelinkStagesBesideTheLiveSession(t *testing.T) {
	h := testHelper(t, "sim", "--rotate=2s")
	s, live := h.s, simKey
	staged, old := live.At(StageNew), live.At(StageOld)
	oldTok := linkSim(t, s, live)

	newTok := linkSim(t, s, staged)
	if err := threadsWith(t, s, live, oldTok); err != nil {
		t.Fatalf("the live session while a replacement is linked = %v, want served", err)
	}
	if s.SessionDir(staged) == s.SessionDir(live) || s.SessionDir(old) == s.SessionDir(live) {
		t.Fatal("the stages share a session directory")
	}

	if err := s.Promote(live, newTok); err != nil {
		t.Fatalf("Promote = %v", err)
	}
	if err := threadsWith(t, s, live, newTok); err != nil {
		t.Fatalf("the new token after Promote = %v, want served", err)
	}
	if err := threadsWith(t, s, live, oldTok); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("the old token after Promote = %v, want ErrUnauthorized", err)
	}
	if _, err := os.Stat(s.SessionDir(staged)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staged directory after Promote: %v, want moved", err)
	}

	if _, err := os.Stat(s.swapPath(live)); err != nil {
		t.Errorf("swap record after Promote: %v, want written", err)
	}
	if err := s.Restore(live); err != nil {
		t.Fatalf("Restore = %v", err)
	}
	if _, err := os.Stat(s.swapPath(live)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("swap record after Restore: %v, want removed", err)
	}
	if err := threadsWith(t, s, live, oldTok); err != nil {
		t.Fatalf("the old token after Restore = %v, want served", err)
	}
	if err := s.Unlink(t.Context(), staged); err != nil {
		t.Fatalf("Unlink(staged) = %v", err)
	}
	if _, err := os.Stat(s.SessionDir(staged)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staged directory after Unlink: %v, want removed", err)
	}
	if err := threadsWith(t, s, live, oldTok); err != nil {
		t.Fatalf("the live session after the staged one was unlinked = %v, want served", err)
	}

	// A crash between Promote's two renames: the live directory is gone,
	// the retired one is there. The next start puts it back.
	s.stopSession(live)
	if err := os.Rename(s.SessionDir(live), s.SessionDir(old)); err != nil {
		t.Fatal(err)
	}
	if err := threadsWith(t, s, live, oldTok); err != nil {
		t.Fatalf("after a swap cut short = %v, want the previous session served", err)
	}

	if err := s.Promote(live, newTok); err == nil {
		t.Error("Promote with nothing staged succeeded")
	}
	if err := threadsWith(t, s, live, oldTok); err != nil {
		t.Fatalf("after a refused Promote = %v, want served", err)
	}
	if err := s.StartLink(t.Context(), SessionKey{HelperID: "sim", AppID: "a", Slot: "b", Stage: "../x"}); err == nil {
		t.Error("a key of an unknown stage was served")
	}
}

// A crash can stop a relink at any point between Promote's first step
// and the end of its settling; FinishSwap, given the token the caller
// committed, keeps exactly that link: the committed token is served, the
// other refused, nothing is left beside the live session, and the swap
// record is gone. Each case builds the state the crash leaves from a real
// Promote, then settles it as a restart would (the sessions stopped,
// Swaps listing the slot).
func TestFinishSwapKeepsTheCommittedLink(t *testing.T) {
	h := testHelper(t, "sim", "--rotate=2s")
	s, live := h.s, simKey
	staged, old := live.At(StageNew), live.At(StageOld)
	oldTok := linkSim(t, s, live)
	rename := func(from, to SessionKey) {
		t.Helper()
		if err := os.Rename(s.SessionDir(from), s.SessionDir(to)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// crash turns the state a whole Promote leaves into the one the
		// crash leaves.
		crash        func()
		commitNew    bool // the commit happened
		wantRestored bool
	}{
		{name: "record written, no rename yet", crash: func() { rename(live, staged); rename(old, live) }},
		{name: "between the two renames", crash: func() { rename(live, staged) }, wantRestored: true},
		{name: "after Promote, before the commit", crash: func() {}, wantRestored: true},
		{name: "after the commit, before the old session is retired", crash: func() {}, commitNew: true},
		{name: "after the commit and the retirement, before the record goes", crash: func() { os.RemoveAll(s.SessionDir(old)) }, commitNew: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newTok := linkSim(t, s, staged)
			if err := s.Promote(live, newTok); err != nil {
				t.Fatalf("Promote = %v", err)
			}
			tc.crash()
			for _, st := range []Stage{StageLive, StageNew, StageOld} {
				s.stopSession(live.At(st)) // the processes die with the crash
			}
			committed, other := oldTok, newTok
			if tc.commitNew {
				committed, other = newTok, oldTok
			}
			if got := s.Swaps(); !slices.Equal(got, []SessionKey{live}) {
				t.Fatalf("Swaps = %v, want the slot", got)
			}
			restored, err := s.FinishSwap(t.Context(), live, committed)
			if err != nil || restored != tc.wantRestored {
				t.Fatalf("FinishSwap = %v, %v; want restored %v", restored, err, tc.wantRestored)
			}
			if err := threadsWith(t, s, live, committed); err != nil {
				t.Fatalf("the committed token after settling = %v, want served", err)
			}
			if err := threadsWith(t, s, live, other); !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("the other token after settling = %v, want ErrUnauthorized", err)
			}
			for _, k := range []SessionKey{staged, old} {
				if _, err := os.Stat(s.SessionDir(k)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%q directory after settling: %v, want retired", k.Stage, err)
				}
			}
			if got := s.Swaps(); len(got) != 0 {
				t.Errorf("Swaps after settling = %v, want none", got)
			}
			if restored, err := s.FinishSwap(t.Context(), live, committed); restored || err != nil {
				t.Errorf("FinishSwap again = %v, %v; want nothing to do", restored, err)
			}
			oldTok = committed
		})
	}
}
