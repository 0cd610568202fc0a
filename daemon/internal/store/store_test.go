package store

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Every test runs under a permissive umask, so a file the store leaves
	// to the umask shows up as 0644/0755 instead of hiding behind 077.
	permissiveUmask()
	os.Exit(m.Run())
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStore opens a store in a fresh data directory (created by Open) and
// closes it when the test ends.
func openStore(t testing.TB, edit ...func(*Options)) *Store {
	t.Helper()
	o := Options{Dir: filepath.Join(t.TempDir(), "data"), Now: newClock().Now, Logger: slog.New(slog.DiscardHandler)}
	for _, e := range edit {
		e(&o)
	}
	s, err := Open(t.Context(), o)
	if err != nil {
		t.Fatalf("Open(%q) = %v", o.Dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func update(t *testing.T, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.Update(t.Context(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t *testing.T, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.View(t.Context(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

func TestUpdateRollsBackOnErrorAndPanic(t *testing.T) {
	s := openStore(t)
	boom := errors.New("boom")
	err := s.Update(t.Context(), func(tx *Tx) error {
		if err := tx.PutSecret("auth:a:s:k", Secret("v")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want %v", err, boom)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Update swallowed a panic")
			}
		}()
		s.Update(t.Context(), func(tx *Tx) error {
			tx.PutSecret("auth:a:s:k", Secret("v"))
			panic("boom")
		})
	}()
	view(t, s, func(tx *Tx) error {
		if _, err := tx.Secret("auth:a:s:k"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Secret after rollback = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestOnCommitRunsOnlyAfterCommit(t *testing.T) {
	s := openStore(t)
	var ran []string
	s.Update(t.Context(), func(tx *Tx) error {
		tx.OnCommit(func() { ran = append(ran, "rolled back") })
		return errors.New("no")
	})
	update(t, s, func(tx *Tx) error {
		tx.OnCommit(func() { ran = append(ran, "first") })
		tx.OnCommit(func() { ran = append(ran, "second") })
		return nil
	})
	if len(ran) != 2 || ran[0] != "first" || ran[1] != "second" {
		t.Errorf("OnCommit ran %q, want [first second]", ran)
	}
}

func TestViewRefusesWrites(t *testing.T) {
	s := openStore(t)
	err := s.View(t.Context(), func(tx *Tx) error { return tx.PutSecret("auth:a:s:k", Secret("v")) })
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutSecret in View = %v, want ErrReadOnly", err)
	}
	err = s.View(t.Context(), func(tx *Tx) error { _, err := tx.DeleteSlotSecrets("a", "s"); return err })
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeleteSlotSecrets in View = %v, want ErrReadOnly", err)
	}
}

func TestUpdatesSerializeReadCheckWrite(t *testing.T) {
	// Many concurrent read-increment-write transactions lose no increment:
	// BEGIN IMMEDIATE keeps a read from going stale before its write.
	s := openStore(t)
	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				err := s.Update(t.Context(), func(tx *Tx) error {
					v, err := tx.Secret("counter")
					if errors.Is(err, ErrNotFound) {
						v, err = Secret{0}, nil
					}
					if err != nil {
						return err
					}
					return tx.PutSecret("counter", Secret{v[0] + 1})
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	view(t, s, func(tx *Tx) error {
		v, err := tx.Secret("counter")
		if err != nil || v[0] != workers*rounds {
			t.Errorf("counter = %d, %v, want %d", v[0], err, workers*rounds)
		}
		return nil
	})
}

func TestTimeFormat(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), "2026-05-01T10:00:00.000Z"},
		{time.Date(2026, 5, 1, 12, 0, 0, 999999999, time.FixedZone("x", 2*3600)), "2026-05-01T10:00:00.999Z"},
	}
	for _, tc := range tests {
		if got := FormatTime(tc.in); got != tc.want {
			t.Errorf("FormatTime(%v) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := ParseTime(tc.want)
		if err != nil || FormatTime(back) != tc.want {
			t.Errorf("ParseTime(%q) = %v, %v", tc.want, back, err)
		}
	}
	for _, bad := range []string{"2026-05-01T10:00:00Z", "2026-05-01T10:00:00.000+00:00", "2026-05-01 10:00:00.000Z", ""} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) = nil error, want an error", bad)
		}
	}
}

func TestTxNowIsOneTimestampPerTransaction(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	update(t, s, func(tx *Tx) error {
		first := tx.Now()
		c.Advance(time.Hour)
		if !tx.Now().Equal(first) {
			t.Errorf("Tx.Now moved within a transaction: %v then %v", first, tx.Now())
		}
		if want := time.Date(2026, 5, 1, 10, 0, 0, 123000000, time.UTC); !first.Equal(want) {
			t.Errorf("Tx.Now() = %v, want %v (UTC, milliseconds)", first, want)
		}
		return nil
	})
}

func removeIfExists(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}
