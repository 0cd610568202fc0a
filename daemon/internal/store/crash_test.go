//go:build unix

package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCrashKeepsRowsAndSecretsTogether kills a writer at random moments and
// checks that every transaction survived whole or not at all: the database
// passes integrity_check, every approved row has its credential, every
// revoked row has none, and no credential is left without its row.
func TestCrashKeepsRowsAndSecretsTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := filepath.Join(t.TempDir(), "data")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	total := 0
	for round := range 6 {
		cmd := childCommand(ctx, "TestCrashChild", dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if sc.Text() == "ready" {
					ready <- true
					break
				}
			}
			close(ready)
		}()
		select {
		case ok := <-ready:
			if !ok {
				cmd.Wait()
				t.Fatalf("round %d: child exited before writing", round)
			}
		case <-ctx.Done():
			t.Fatal("child never became ready")
		}
		time.Sleep(time.Duration(rng.IntN(60_000)) * time.Microsecond) // let it run for a random while
		cmd.Process.Kill()                                             // SIGKILL: no deferred function, no Close
		cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child ended by itself (%v) instead of being killed", round, cmd.ProcessState)
		}
		total = checkCrashInvariants(t, dir, round)
	}
	if total < 10 {
		t.Errorf("the children committed only %d transactions: the kills came too early to test anything", total)
	}
	t.Logf("%d rows across %d kills", total, 6)
}

func checkCrashInvariants(t *testing.T, dir string, round int) int {
	t.Helper()
	s, err := Open(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatalf("round %d: reopen after SIGKILL = %v", round, err)
	}
	defer s.Close()
	var check string
	if err := s.w.QueryRowContext(t.Context(), "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("round %d: integrity_check = %q, %v", round, check, err)
	}
	n := 0
	view(t, s, func(tx *Tx) error {
		conns, err := tx.AllConnections()
		if err != nil {
			return err
		}
		n = len(conns)
		owned := map[string]bool{}
		for _, c := range conns {
			got, err := tx.SlotSecrets(c.AppID, c.Slot)
			if err != nil {
				return err
			}
			switch c.Status {
			case StatusApproved:
				if len(got) != 1 || string(got["token"]) != "value-"+c.AppID {
					t.Errorf("round %d: approved row %s has credentials %v, want its one token", round, c.AppID, len(got))
				}
				owned[FieldKey(c.AppID, c.Slot, "token")] = true
			case StatusRevoked:
				if len(got) != 0 {
					t.Errorf("round %d: revoked row %s kept %d credentials", round, c.AppID, len(got))
				}
			}
		}
		keys, err := tx.SecretKeys("auth:")
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !owned[k] {
				t.Errorf("round %d: credential %s has no approved row", round, k)
			}
		}
		return nil
	})
	return n
}

// TestCrashChild is the writer TestCrashKeepsRowsAndSecretsTogether kills:
// each transaction inserts an approved row with its credential, and every
// third one also revokes the previous row and wipes its credential. It
// never returns in a normal run's child; in a normal run it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("child process helper")
	}
	s, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	all, err := s.AllConnections(context.Background())
	if err != nil {
		os.Exit(4)
	}
	for i := len(all); ; i++ {
		app := fmt.Sprintf("crash-%06d", i)
		err := s.Update(context.Background(), func(tx *Tx) error {
			row := declared(app, "s")
			row.Status, row.ApprovedAt = StatusApproved, ptr(tx.Now())
			if _, err := tx.UpsertConnection(row); err != nil {
				return err
			}
			if err := tx.PutSecret(FieldKey(app, "s", "token"), Secret("value-"+app)); err != nil {
				return err
			}
			if i%3 != 0 || i == 0 {
				return nil
			}
			prev, err := tx.Connection(fmt.Sprintf("crash-%06d", i-1), "s")
			if err != nil {
				return err
			}
			prev.Status, prev.RevokedAt = StatusRevoked, ptr(tx.Now())
			if _, err := tx.UpsertConnection(prev); err != nil {
				return err
			}
			_, err = tx.DeleteSlotSecrets(prev.AppID, prev.Slot)
			return err
		})
		if err != nil {
			fmt.Println(err)
			os.Exit(5)
		}
		if i == len(all) {
			fmt.Println("ready")
		}
	}
}
