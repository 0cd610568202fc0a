package linkdevice

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A relink's swap is two renames (Promote) followed by the caller's commit
// of the new token; a crash can stop it anywhere. The swap record, written
// by Promote before its first rename and removed once the outcome is
// settled, makes the outcome decidable afterwards: the record names the
// slot and the hash of the token the promoted session answers to, the
// caller knows which token it committed, and the directories say how far
// the renames went (a StageOld directory exists exactly when the first
// rename happened). FinishSwap reads the three and keeps the committed
// session live.

// swapSuffix ends a swap record's file name: <live session directory>.swap,
// beside the session directories and out of every helper's reach (a
// confined helper may write its own session directory only).
const swapSuffix = ".swap"

// swapRecord is a swap record's content.
type swapRecord struct {
	AppID string `json:"app_id"`
	Slot  string `json:"slot"`
	// TokenSHA256 is the hex SHA-256 of the promoted session's token: a
	// 256-bit random value's hash, which tells the token apart and gives
	// nothing of it away.
	TokenSHA256 string `json:"token_sha256"`
}

func tokenHash(t Token) string {
	sum := sha256.Sum256([]byte(t.v))
	return hex.EncodeToString(sum[:])
}

func (s *Supervisor) swapPath(live SessionKey) string {
	return s.SessionDir(live.At(StageLive)) + swapSuffix
}

// writeSwap writes live's swap record for token and flushes it to disk
// before it returns: the renames that follow must never be on disk
// without it.
func (s *Supervisor) writeSwap(live SessionKey, token Token) error {
	b, err := json.Marshal(swapRecord{AppID: live.AppID, Slot: live.Slot, TokenSHA256: tokenHash(token)})
	if err != nil {
		return err
	}
	path := s.swapPath(live)
	f, err := os.CreateTemp(filepath.Dir(path), ".swap-*")
	if err != nil {
		return fmt.Errorf("write the swap record: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename: nothing
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write the swap record: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// removeSwap removes live's swap record: the swap is settled.
func (s *Supervisor) removeSwap(live SessionKey) error {
	path := s.swapPath(live)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the swap record: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// readSwap reads live's swap record; ok is false when there is none.
func (s *Supervisor) readSwap(live SessionKey) (swapRecord, bool, error) {
	b, err := os.ReadFile(s.swapPath(live))
	if errors.Is(err, os.ErrNotExist) {
		return swapRecord{}, false, nil
	}
	if err != nil {
		return swapRecord{}, false, fmt.Errorf("read the swap record: %w", err)
	}
	var rec swapRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return swapRecord{}, false, fmt.Errorf("read the swap record: %w", err)
	}
	return rec, true, nil
}

// Swaps lists the live keys of every slot whose swap is unfinished (a
// swap record is left): what a crash cut short, for FinishSwap to decide
// at start. A record that names another slot than its file is ignored.
func (s *Supervisor) Swaps() []SessionKey {
	var out []SessionKey
	for _, id := range s.Helpers() {
		ents, err := os.ReadDir(filepath.Join(s.cfg.StateDir, id))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), swapSuffix) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(s.cfg.StateDir, id, e.Name()))
			var rec swapRecord
			if err != nil || json.Unmarshal(b, &rec) != nil {
				s.log.Warn("an unreadable swap record is left", "helper", id, "file", e.Name())
				continue
			}
			k := SessionKey{HelperID: id, AppID: rec.AppID, Slot: rec.Slot}
			if filepath.Base(s.swapPath(k)) != e.Name() {
				s.log.Warn("a swap record names another slot than its file", "helper", id, "file", e.Name())
				continue
			}
			out = append(out, k)
		}
	}
	return out
}

// FinishSwap settles the swap of k's slot that Promote began, given the
// token the caller has committed for the slot (zero: none). When it is
// the promoted session's token the promoted session stays live (or
// becomes live, had the crash come between the renames) and the retired
// one is unlinked; otherwise the commit never happened and the previous
// session becomes live again while the promoted one is unlinked; restored
// reports the latter when it moved a directory. Unlink is best effort as
// always (the directory goes regardless). The swap record goes last, so a
// crash inside FinishSwap is settled by the next call the same way. A
// slot with no swap record is left alone. The caller calls it after its
// commit, and at start (Swaps) before any relink of the slot begins: it
// unlinks whatever is staged beside a restored session.
func (s *Supervisor) FinishSwap(ctx context.Context, k SessionKey, committed Token) (restored bool, err error) {
	live := k.At(StageLive)
	if _, err := s.checkKey(live); err != nil {
		return false, err
	}
	rec, ok, err := s.readSwap(live)
	if err != nil || !ok {
		return false, err
	}
	promoted := !committed.IsZero() && subtle.ConstantTimeCompare([]byte(rec.TokenSHA256), []byte(tokenHash(committed))) == 1
	liveDir, newDir, oldDir := s.SessionDir(live), s.SessionDir(k.At(StageNew)), s.SessionDir(k.At(StageOld))
	loser := k.At(StageNew)
	if promoted {
		loser = k.At(StageOld)
		if !exists(liveDir) && exists(oldDir) {
			// Cut between the renames, yet committed: finish the swap.
			if err := s.swapDirs(live, newDir, liveDir); err != nil {
				return false, err
			}
		}
	} else if exists(oldDir) {
		// The first rename happened: the live directory, if any, holds
		// the promoted session. Put it aside and the previous one back.
		if err := s.swapDirs(live, liveDir, newDir, oldDir, liveDir); err != nil {
			return false, err
		}
		restored = true
	}
	if err := s.retire(ctx, loser); err != nil {
		return restored, err
	}
	return restored, s.removeSwap(live)
}

// swapDirs renames each pair of dirs (from, to, from, to, …) under the
// slot's swap lock; a from that does not exist is skipped, a to that
// exists is replaced.
func (s *Supervisor) swapDirs(live SessionKey, dirs ...string) error {
	if !s.beginSwap(live) {
		return ErrSwapping
	}
	defer s.endSwap(live)
	for i := 0; i+1 < len(dirs); i += 2 {
		if !exists(dirs[i]) {
			continue
		}
		if err := os.RemoveAll(dirs[i+1]); err != nil {
			return fmt.Errorf("settle a session swap: %w", err)
		}
		if err := os.Rename(dirs[i], dirs[i+1]); err != nil {
			return fmt.Errorf("settle a session swap: %w", err)
		}
	}
	syncDir(filepath.Dir(s.SessionDir(live)))
	return nil
}

// retire ends the session of k that lost a swap: Unlink when its
// directory holds a session, else the (empty) directory is removed
// without starting a helper for it. The error is the directory's: the
// helper's own answer is only logged.
func (s *Supervisor) retire(ctx context.Context, k SessionKey) error {
	dir := s.SessionDir(k)
	if s.HasSession(k) {
		if err := s.Unlink(ctx, k); err != nil {
			s.log.Warn("unlink a session that lost a swap", "helper", k.HelperID, "app_id", k.AppID, "slot", k.Slot, "stage", string(k.Stage), "err", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("retire a session: %w", err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
