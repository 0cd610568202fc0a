//go:build linux

package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/internal/testutil"
)

// TestJournalFullDisk runs a daemon on a small tmpfs in a mount namespace
// of its own (testutil.RunInTmpfs): see TestJournalFullDiskChild.
func TestJournalFullDisk(t *testing.T) {
	testutil.RunInTmpfs(t, "TestJournalFullDiskChild", "8m", 3*time.Minute)
}

// TestJournalFullDiskChild is TestJournalFullDisk's child. With the data
// directory's disk full, a credentialed request is refused with the fixed
// sentence and, once a journal write failed, before it is sent (the
// upstream sees nothing); a writer answers STORAGE_FULL; status says so.
// Space returns: the next request works, with no restart, and the state
// clears.
func TestJournalFullDiskChild(t *testing.T) {
	mnt := testutil.TmpfsChild(t)

	r := newRig(t, func(c *Config) { c.DataDir = filepath.Join(mnt, "data") })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.autoDecide(t, true, fetch.RememberOnce)
	get := frame("GET", "https://api.example.com/v1/items", nil)
	post := frame("POST", "https://api.example.com/v1/items", map[string]any{"body": `{"a":1}`})
	if res, _ := r.net(t, "app1", get); res.Code != "" || res.Status != 200 {
		t.Fatalf("GET before the disk fills = %+v", res)
	}

	filler := filepath.Join(mnt, "filler")
	testutil.FillDisk(t, filler)
	// Requests go on while SQLite still has room in its WAL; the first
	// whose row cannot be committed gets the refusal, not the answer.
	refusedAt := -1
	for i := range 4000 {
		res, resp := r.net(t, "app1", get)
		if res.Code == "" {
			continue
		}
		if res.Code != errcode.NetFetchFailed || resp.Error == nil || resp.Error.Message != journal.MsgDiskFull {
			t.Fatalf("GET %d on a full disk = %+v %+v, want NET_FETCH_FAILED %q", i, res, resp.Error, journal.MsgDiskFull)
		}
		refusedAt = i
		break
	}
	if refusedAt < 0 {
		t.Fatal("4000 GETs on a full 8 MiB tmpfs all answered")
	}
	t.Logf("the first GET refused on the full disk was number %d", refusedAt)
	if r.d.journal.Writable() {
		t.Fatal("the journal reads writable after a failed commit")
	}

	// Refused before the send: the upstream sees neither request.
	seen := len(r.up.requests())
	for _, f := range [][]byte{get, post} {
		res, resp := r.net(t, "app1", f)
		if res.Code != errcode.NetFetchFailed || resp.Error == nil || resp.Error.Message != journal.MsgDiskFull {
			t.Fatalf("a request on the full disk = %+v %+v, want NET_FETCH_FAILED %q", res, resp.Error, journal.MsgDiskFull)
		}
	}
	if n := len(r.up.requests()); n != seen {
		t.Fatalf("the upstream received %d requests while the journal could not be written", n-seen)
	}

	// A writer: 507 STORAGE_FULL with its fixed sentence, nothing changed.
	err := r.d.grants.SetCredentials(t.Context(), "app1", "ex", map[string]string{"api_key": "another-" + secretKey})
	var ce *errcode.Error
	if !errors.As(err, &ce) || ce.Code != errcode.StorageFull || ce.Msg != "the disk holding snugd's data is full; nothing was changed" {
		t.Fatalf("SetCredentials on a full disk = %v, want STORAGE_FULL", err)
	}
	if strings.Contains(err.Error(), secretKey) {
		t.Fatalf("the writer's error carries the credential: %v", err)
	}

	st, err := r.d.StatusReport(t.Context())
	if err != nil {
		t.Fatalf("StatusReport on a full disk = %v", err)
	}
	if st.Unwritable != journal.MsgDiskFull || st.UnwritableSince.IsZero() || st.DiskFree > 64<<10 {
		t.Fatalf("status on a full disk = unwritable %q since %v, %d free; want %q", st.Unwritable, st.UnwritableSince, st.DiskFree, journal.MsgDiskFull)
	}

	// Space returns: the next request is the probe, and it works.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{get, post} {
		if res, resp := r.net(t, "app1", f); res.Code != "" || res.Status != 200 {
			t.Fatalf("a request once space returned = %+v %+v", res, resp.Error)
		}
	}
	if n := len(r.up.requests()); n != seen+2 {
		t.Fatalf("the upstream received %d requests once space returned, want 2", n-seen)
	}
	if st, err := r.d.StatusReport(t.Context()); err != nil || st.Unwritable != "" {
		t.Fatalf("status once space returned = %q, %v; want writable", st.Unwritable, err)
	}
	if err := r.d.grants.SetCredentials(t.Context(), "app1", "ex", map[string]string{"api_key": secretKey}); err != nil {
		t.Fatalf("SetCredentials once space returned = %v", err)
	}
	// Each request that reached the upstream has its row, complete, but
	// the GET refused after its send (its host got the refusal, not the
	// answer: no answer without its row).
	sent := map[string]int{}
	for _, e := range journalRows(t, r.d.store) {
		if e.Outcome == store.OutcomeSentUnknown {
			t.Errorf("row %d still reads %s: %+v", e.ID, e.Outcome, e)
		}
		if e.Outcome == "sent" {
			sent[e.Method]++
		}
	}
	if sent["GET"]+sent["POST"] != len(r.up.requests())-1 || sent["POST"] != 1 {
		t.Errorf("sent rows %v for %d requests the upstream received (1 POST, 1 GET refused after its send)", sent, len(r.up.requests()))
	}

	// A read-only remount under the running daemon: the kernel refuses
	// it (EBUSY) while snugd holds its files open for writing, which it
	// always does; when it does not, requests are refused with the
	// read-only sentence.
	err = syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, "")
	if errors.Is(err, syscall.EBUSY) {
		t.Logf("remount read-only under the running daemon: %v (the kernel refuses while files are open for writing)", err)
		return
	}
	if err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	defer syscall.Mount("", mnt, "", syscall.MS_REMOUNT, "size=8m")
	res, resp := r.net(t, "app1", post)
	if res.Code != errcode.NetFetchFailed || resp.Error == nil || resp.Error.Message != journal.MsgDiskReadOnly {
		t.Fatalf("a POST on a read-only disk = %+v %+v, want %q", res, resp.Error, journal.MsgDiskReadOnly)
	}
}
