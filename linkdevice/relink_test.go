package linkdevice

import (
	"errors"
	"os"
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

	if err := s.Promote(live); err != nil {
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

	if err := s.Restore(live); err != nil {
		t.Fatalf("Restore = %v", err)
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

	if err := s.Promote(live); err == nil {
		t.Error("Promote with nothing staged succeeded")
	}
	if err := threadsWith(t, s, live, oldTok); err != nil {
		t.Fatalf("after a refused Promote = %v, want served", err)
	}
	if err := s.StartLink(t.Context(), SessionKey{HelperID: "sim", AppID: "a", Slot: "b", Stage: "../x"}); err == nil {
		t.Error("a key of an unknown stage was served")
	}
}
