package daemon

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // sql.Open("sqlite3"): the test alters the real file beside the store

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
)

// flipSealedBit flips one bit of the ciphertext stored under key in the
// data directory's snugd.db, through a connection of its own (as a disk
// error or a hand edit would), and fails when there is no such row.
func flipSealedBit(t *testing.T, dir, key string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, store.DBFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var blob []byte
	if err := db.QueryRow("SELECT value FROM snug_secrets WHERE key = ?", key).Scan(&blob); err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	blob[len(blob)/2] ^= 0x04 // inside the ciphertext: past the version and nonce, before the tag
	if _, err := db.Exec("UPDATE snug_secrets SET value = ? WHERE key = ?", blob, key); err != nil {
		t.Fatal(err)
	}
}

// TestUnreadableCredentialAtStart: a sealed value altered on disk while
// snugd was down is found by the seal check that runs with start's
// integrity check. The row reads unreadable (not connected), status counts
// it, its hint names the field and the step that stores it again, nothing
// is sent with it, and storing the field again makes it connected.
func TestUnreadableCredentialAtStart(t *testing.T) {
	var cfg Config
	r := newRig(t, func(c *Config) { cfg = *c })
	dir := cfg.DataDir
	r.connect(t, "app1", apiKeyReq("weather", apiHost), map[string]string{"api_key": secretKey})
	r.connect(t, "app1", apiKeyReq("spare", "spare.example.com"), map[string]string{"api_key": secretKey})
	r.d.Close()
	flipSealedBit(t, dir, store.FieldKey("app1", "weather", "api_key"))

	// The same directory and configuration, a new daemon.
	d, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New after the flip: %v", err)
	}
	run(t, d)
	t.Cleanup(func() { d.Close() })
	r.d = d

	ctx := t.Context()
	var apps []grants.AppSummary
	for deadline := time.Now().Add(10 * time.Second); ; {
		if apps, err = d.records.Apps(ctx); err != nil {
			t.Fatal(err)
		}
		if cs, _ := connOf(t, apps, "app1", "weather"); cs.Credentials == grants.ConnUnreadable || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cs, at := connOf(t, apps, "app1", "weather")
	want := "credential unreadable: the stored value of field api_key does not open under the master key: store it again: snugd ctl credentials set app1 weather"
	if cs.Credentials != grants.ConnUnreadable || !slices.Equal(cs.Unreadable, []string{"api_key"}) || len(at) != 1 || at[0].Kind != grants.AttentionUnreadable || at[0].Message != want {
		t.Fatalf("after the flip: %+v %+v; want unreadable with %q", cs, at, want)
	}
	if spare, at := connOf(t, apps, "app1", "spare"); spare.Credentials != grants.ConnConnected || len(at) != 0 {
		t.Errorf("the untouched row: %+v %+v, want connected", spare, at)
	}
	st, err := d.StatusReport(ctx)
	if err != nil || st.Connections.Unreadable != 1 {
		t.Errorf("StatusReport = %+v, %v; want 1 unreadable", st.Connections, err)
	}

	// A request is refused and nothing leaves.
	sent := len(r.up.requests())
	if res, _ := r.net(t, "app1", frame("GET", "https://"+apiHost+"/weather", nil)); res.Code != errcode.NetFetchFailed || len(r.up.requests()) != sent {
		t.Errorf("a request with the unreadable key = %q (upstream saw %d more); want NET_FETCH_FAILED, nothing sent", res.Code, len(r.up.requests())-sent)
	}

	// Storing it again is the way out.
	if err := d.grants.SetTypedCredentials(ctx, "app1", "weather", map[string]string{"api_key": secretKey}); err != nil {
		t.Fatal(err)
	}
	apps, _ = d.records.Apps(ctx)
	if cs, at := connOf(t, apps, "app1", "weather"); cs.Credentials != grants.ConnConnected || len(at) != 0 {
		t.Errorf("after storing it again: %+v %+v, want connected", cs, at)
	}
	if st, _ := d.StatusReport(ctx); st.Connections.Unreadable != 0 {
		t.Errorf("StatusReport after storing it again: %+v", st.Connections)
	}
}

// TestUnreadableCredentialOnRequest: a value altered under a running
// daemon is found by the request that fails to open it, and its row then
// reads unreadable, with no value opened by the status read. A row's
// state that does not open sends it to revoke and reconnect; a ceremony's
// field to its ceremony.
func TestUnreadableCredentialOnRequest(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	r.connect(t, "app1", apiKeyReq("weather", apiHost), map[string]string{"api_key": secretKey})
	flipSealedBit(t, r.d.DataDir(), store.FieldKey("app1", "weather", "api_key"))
	apps, _ := r.d.records.Apps(ctx)
	if cs, _ := connOf(t, apps, "app1", "weather"); cs.Credentials != grants.ConnConnected {
		t.Fatalf("before any read of the value: %+v", cs) // the status read opens no value
	}
	if res, _ := r.net(t, "app1", frame("GET", "https://"+apiHost+"/weather", nil)); res.Code != errcode.NetFetchFailed {
		t.Fatalf("request = %q, want NET_FETCH_FAILED", res.Code)
	}
	apps, _ = r.d.records.Apps(ctx)
	if cs, at := connOf(t, apps, "app1", "weather"); cs.Credentials != grants.ConnUnreadable || len(at) != 1 || !strings.HasPrefix(at[0].Message, "credential unreadable: the stored value of field api_key") {
		t.Errorf("after the request: %+v %+v", cs, at)
	}

	// The state itself: revoke and connect it again (it held the pin and
	// the verify marks, which nothing else can restore).
	r.connect(t, "app1", lanReq("bridge", "192.168.1.20"), map[string]string{"username": secretKey})
	flipSealedBit(t, r.d.DataDir(), store.ConnectionStateKey("app1", "bridge"))
	apps, _ = r.d.records.Apps(ctx) // the summary reads the state, and so learns it
	cs, at := connOf(t, apps, "app1", "bridge")
	want := "credential unreadable: the connection's stored state does not open under the master key: revoke it and connect it again: snugd ctl revoke app1 bridge, then snugd ctl reconnect app1 bridge"
	if cs.Credentials != grants.ConnUnreadable || len(at) != 1 || at[0].Message != want {
		t.Errorf("an unreadable state: %+v %+v; want %q", cs, at, want)
	}
	if _, err := r.d.grants.Revoke(ctx, "app1", "bridge"); err != nil {
		t.Fatalf("Revoke of the unreadable row: %v", err)
	}
	apps, _ = r.d.records.Apps(ctx)
	if cs, at := connOf(t, apps, "app1", "bridge"); cs.Credentials == grants.ConnUnreadable || len(at) != 0 {
		t.Errorf("after the revoke: %+v %+v", cs, at)
	}

	// A ceremony's field: its ceremony stores it again.
	r.connectSim(t, "app1", "chat", nil)
	commitVerified(t, r.d, "app1", "chat", "helper_token", func(s *grants.ConnState, at int64) { s.LinkVerifiedAt = &at })
	flipSealedBit(t, r.d.DataDir(), store.FieldKey("app1", "chat", "helper_token"))
	if _, err := r.d.store.CheckSeals(ctx); err != nil {
		t.Fatal(err)
	}
	apps, _ = r.d.records.Apps(ctx)
	if _, at := connOf(t, apps, "app1", "chat"); len(at) != 1 || !strings.HasSuffix(at[0].Message, ": store it again: snugd ctl pair link app1 chat") {
		t.Errorf("an unreadable helper token: %+v", at)
	}
}

// BenchmarkCheckSeals measures the seal check's cost per stored value,
// the price of knowing unreadable values at start without opening any
// at status reads.
func BenchmarkCheckSeals(b *testing.B) {
	r := newRig(b)
	for i := range 50 {
		r.connect(b, "app"+string(rune('a'+i%26))+string(rune('a'+i/26)), apiKeyReq("weather", apiHost), map[string]string{"api_key": secretKey})
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := r.d.store.CheckSeals(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
