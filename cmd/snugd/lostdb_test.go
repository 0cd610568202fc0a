package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/internal/testutil"
)

// TestStartRefusesLostDatabase: snugd run on a data directory whose
// snugd.db was emptied while secrets.key stayed refuses to start (exit 1),
// names the ways out and leaves the file empty; after snugd ctl reset
// --yes it starts over.
func TestStartRefusesLostDatabase(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.stop()
	db := filepath.Join(td.dir, dbFileName)
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")

	var stderr testutil.LogBuffer
	e := env{stdout: &testutil.LogBuffer{}, stderr: &stderr, getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if code := dispatch(ctx, e, []string{"run", "--data-dir", td.dir, "--port", strconv.Itoa(freePort(t))}); code != exitNo {
		t.Fatalf("snugd run on an emptied database = %d, want %d; stderr:\n%s", code, exitNo, stderr.String())
	}
	for _, want := range []string{"database lost", db, "restore", "snugd ctl reset --yes"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, stderr.String())
		}
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
		t.Errorf("the refused start wrote into the emptied database: %v, %v", fi, err)
	}

	if code, out, errOut := td.ctl(t, "", "reset", "--yes"); code != exitOK {
		t.Fatalf("reset --yes = %d, %q, %q", code, out, errOut)
	}
	var stdout2, stderr2 testutil.LogBuffer
	runCtx, stop := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- dispatch(runCtx, env{stdout: &stdout2, stderr: &stderr2, getenv: e.getenv}, []string{"run", "--data-dir", td.dir, "--port", strconv.Itoa(freePort(t))})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout2.String(), "API on") {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("snugd run after reset did not start; stderr:\n%s", stderr2.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("snugd run after reset = %d; stderr:\n%s", code, stderr2.String())
		}
	case <-time.After(shutdownBound):
		t.Fatal("snugd run did not stop")
	}
}
