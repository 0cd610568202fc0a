package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/internal/testutil"
)

func newTestDaemon(t *testing.T) *Daemon {
	t.Helper()
	clock := testutil.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	d, err := New(t.Context(), Config{DataDir: t.TempDir() + "/data", Logger: slog.New(slog.DiscardHandler), Now: clock.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run(t, d)
	t.Cleanup(func() { d.Close() })
	return d
}

// req builds a minimal valid api_key requirement for slot on the given
// hosts.
func req(slot string, hosts ...string) map[string]any {
	return map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "Example"},
		"kind":             "api_key",
		"fields":           []any{map[string]any{"key": "api_key", "label": "API key", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}},
		"declaredApiHosts": toAny(hosts),
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustAdmit(t *testing.T, v any) grants.Admitted {
	t.Helper()
	a, err := grants.Admit(mustJSON(t, v), grants.ProvenanceUser, nil)
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	return a
}

// approved puts and approves a connection.
func approved(t *testing.T, d *Daemon, app string, v map[string]any) grants.Connection {
	t.Helper()
	ctx := t.Context()
	if _, err := d.putDeclared(ctx, app, mustAdmit(t, v)); err != nil {
		t.Fatalf("putDeclared: %v", err)
	}
	c, err := d.grants.Approve(ctx, app, v["slot"].(string))
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	return c
}

// conformance: P3-C12.3-02, P3-C12.2-07, P3-C12.2-08, P3-C12.1-04
func TestPutDeclared(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	c, err := d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com")))
	if err != nil {
		t.Fatalf("put on absent: %v", err)
	}
	if c.Status != grants.StatusDeclared || c.RequirementVersion != 1 || c.ApprovedAt != nil {
		t.Fatalf("put on absent = %+v, want declared v1", c)
	}
	if g := d.appRows("app").Rows[0]; g.Approved() || len(g.Ceiling) != 0 {
		t.Fatalf("a declared row grants: %+v", g)
	}
	// Same requirement with reordered keys: canonical form unchanged.
	same := `{"declaredApiHosts":["api.example.com"],"kind":"api_key","slot":"wx","provider":{"name":"Example"},` +
		`"request":{"headerTemplate":{"X-Key":"{{api_key}}"}},"fields":[{"type":"secret","label":"API key","key":"api_key"}]}`
	a, err := grants.Admit([]byte(same), grants.ProvenanceUser, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = d.putDeclared(ctx, "app", a); err != nil || c.RequirementVersion != 1 {
		t.Fatalf("put of the same requirement = v%d, %v; want v1", c.RequirementVersion, err)
	}
	if c, err = d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "b.example.com"))); err != nil || c.RequirementVersion != 2 {
		t.Fatalf("put of a changed requirement = v%d, %v; want v2", c.RequirementVersion, err)
	}
	if c.Status != grants.StatusDeclared {
		t.Fatalf("proposer write yielded status %s", c.Status)
	}
}

// conformance: P3-C12.3-03, P3-C12.3-04, P3-C12.1-06
func TestPutDeclaredRefusesApprovedAndRevoked(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	_, err := d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "evil.example.com")))
	testutil.WantCode(t, err, errcode.ConnectionApproved)
	c, _ := d.grants.Connection(ctx, "app", "wx")
	if c.Status != grants.StatusApproved || c.AllowedHosts[0] != "api.example.com" {
		t.Fatalf("approved row changed by a refused put: %+v", c)
	}
	if _, err := d.grants.Revoke(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}
	_, err = d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com")))
	testutil.WantCode(t, err, errcode.ConnectionRevoked)
	if c, _ := d.grants.Connection(ctx, "app", "wx"); c.Status != grants.StatusRevoked {
		t.Fatalf("revoked row changed by a refused put: %s", c.Status)
	}
}

// conformance: P3-C12.2-16, P3-C12.2-17, P3-C12.2-18, P3-C12.3-05
func TestSlotCap(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	for i := range grants.MaxSlotsPerApp {
		slot := fmt.Sprintf("s%d", i)
		approved(t, d, "app", req(slot, "api.example.com"))
		if _, err := d.grants.Revoke(ctx, "app", slot); err != nil {
			t.Fatal(err)
		}
	}
	// Eight tombstones: a ninth slot is refused.
	_, err := d.putDeclared(ctx, "app", mustAdmit(t, req("new", "api.example.com")))
	testutil.WantCode(t, err, errcode.SlotCapReached)
	// Another app is unaffected.
	if _, err := d.putDeclared(ctx, "other", mustAdmit(t, req("new", "api.example.com"))); err != nil {
		t.Fatalf("another app's put: %v", err)
	}

	d2 := newTestDaemon(t)
	for i := range grants.MaxSlotsPerApp {
		if _, err := d2.putDeclared(ctx, "app", mustAdmit(t, req(fmt.Sprintf("s%d", i), "api.example.com"))); err != nil {
			t.Fatal(err)
		}
	}
	// At the cap, replacing an existing declared slot is accepted.
	if _, err := d2.putDeclared(ctx, "app", mustAdmit(t, req("s3", "b.example.com"))); err != nil {
		t.Fatalf("replace at the cap: %v", err)
	}
	_, err = d2.putDeclared(ctx, "app", mustAdmit(t, req("s9", "api.example.com")))
	testutil.WantCode(t, err, errcode.SlotCapReached)
}

// conformance: P3-C12.3-06, P3-C12.3-07, P3-C12.3-19, P3-C12.2-19, P3-C12.2-20, P3-C12.1-05
func TestStagePending(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	before := approved(t, d, "app", req("wx", "api.example.com"))
	c, err := d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "new.example.com")))
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	if c.Status != grants.StatusApproved || !c.NeedsReapproval() || c.RequirementJSON != before.RequirementJSON ||
		strings.Join(c.AllowedHosts, ",") != "api.example.com" || c.RequirementVersion != before.RequirementVersion {
		t.Fatalf("staged row = %+v; want only the pending column changed", c)
	}
	// The grant keeps serving the old ceiling.
	g := d.appRows("app").Rows[0]
	if !g.InCeiling("api.example.com") || g.InCeiling("new.example.com") {
		t.Fatalf("index ceiling = %v while a change is staged", g.Ceiling)
	}
	// Staging the current requirement clears the staged change.
	if c, err = d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com"))); err != nil || c.NeedsReapproval() {
		t.Fatalf("staging the current requirement = %+v, %v", c, err)
	}

	for _, status := range []string{"absent", "declared", "revoked"} {
		t.Run(status, func(t *testing.T) {
			d := newTestDaemon(t)
			switch status {
			case "declared":
				d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com")))
			case "revoked":
				approved(t, d, "app", req("wx", "api.example.com"))
				d.grants.Revoke(ctx, "app", "wx")
			}
			_, err := d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "b.example.com")))
			if status == "absent" {
				testutil.WantCode(t, err, errcode.ConnectionNotFound)
				return
			}
			testutil.WantCode(t, err, errcode.ConnectionNotApproved)
		})
	}
}

// conformance: P3-C12.3-08, P3-C12.3-09, P3-C12.3-10, P3-C12.2-14, P3-C12.5-44, P3-C12.1-08
func TestApprove(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	_, err := d.grants.Approve(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotFound)

	d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "B.example.com", "a.example.com")))
	// A pending column forged in storage on a declared row (the store
	// refuses that shape, so forge it with raw SQL) never reaches the
	// ceiling.
	forgePending(t, d, "app", "wx", mustJSON(t, req("wx", "evil.example.com")))
	c, err := d.grants.Approve(ctx, "app", "wx")
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if got := strings.Join(c.AllowedHosts, ","); got != "a.example.com,b.example.com" {
		t.Fatalf("allowed hosts = %q, want sorted normalized declared hosts only", got)
	}
	if c.Status != grants.StatusApproved || c.ApprovedAt == nil || c.PendingJSON != "" {
		t.Fatalf("approved row = %+v", c)
	}
	_, err = d.grants.Approve(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotDeclared)
	d.grants.Revoke(ctx, "app", "wx")
	_, err = d.grants.Approve(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotDeclared)
}

// forgePending writes pending_requirement_json behind the writers' back, as
// a tampered database file would.
func forgePending(t *testing.T, d *Daemon, app, slot string, pending []byte) {
	t.Helper()
	err := d.store.Update(t.Context(), func(tx *store.Tx) error {
		row, err := tx.Connection(app, slot)
		if err != nil {
			return err
		}
		p := string(pending)
		row.PendingRequirementJSON = &p
		return tx.ForgeConnectionForTest(row)
	})
	if err != nil {
		t.Fatalf("forge: %v", err)
	}
}

// conformance: P3-C12.3-11, P3-C12.3-12, P3-C12.3-13, P3-C12.3-14, P3-C12.3-15, P3-C12.3-21
func TestReapprove(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	_, err := d.grants.Reapprove(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.NoPendingChange)

	d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "new.example.com")))
	c, err := d.grants.Reapprove(ctx, "app", "wx")
	if err != nil {
		t.Fatalf("Reapprove: %v", err)
	}
	if got := strings.Join(c.AllowedHosts, ","); got != "api.example.com,new.example.com" || c.PendingJSON != "" || c.RequirementVersion != 2 {
		t.Fatalf("re-approved row = %+v", c)
	}
	if !d.appRows("app").Rows[0].InCeiling("new.example.com") {
		t.Fatal("the index did not pick up the re-frozen ceiling")
	}

	// A pending requirement forged into storage is re-validated: an invalid
	// one is refused and the grant is unchanged.
	bad := req("wx", "127.0.0.1")
	forgePending(t, d, "app", "wx", mustJSON(t, bad))
	_, err = d.grants.Reapprove(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.RequirementInvalid)
	if c, _ := d.grants.Connection(ctx, "app", "wx"); strings.Contains(strings.Join(c.AllowedHosts, ","), "127") {
		t.Fatalf("forged pending reached the ceiling: %v", c.AllowedHosts)
	}

	d2 := newTestDaemon(t)
	d2.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com")))
	_, err = d2.grants.Reapprove(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotApproved)
}

// conformance: P3-C12.3-16, P3-C12.3-17, P3-C12.3-18, P3-C12.2-15, P3-C13-01
func TestRevokeWipesSlice(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	_, err := d.grants.Revoke(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotFound)
	d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com")))
	_, err = d.grants.Revoke(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotApproved)

	d.grants.Approve(ctx, "app", "wx")
	approved(t, d, "app", req("wy", "api.example.com"))
	for _, slot := range []string{"wx", "wy"} {
		if err := d.grants.SetCredentials(ctx, "app", slot, map[string]string{"api_key": "secret-" + slot}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := d.grants.Revoke(ctx, "app", "wx")
	if err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if c.Status != grants.StatusRevoked || c.RevokedAt == nil {
		t.Fatalf("revoked row = %+v", c)
	}
	if s, _ := d.grants.SlotSecrets(ctx, "app", "wx"); len(s) != 0 {
		t.Fatalf("revoked slot keeps %d secrets", len(s))
	}
	if s, _ := d.grants.SlotSecrets(ctx, "app", "wy"); string(s["api_key"]) != "secret-wy" {
		t.Fatal("revoking one slot wiped another")
	}
	// The tombstone survives reconnect.
	c, err = d.grants.Reconnect(ctx, "app", "wx")
	if err != nil || c.Status != grants.StatusDeclared || c.RevokedAt == nil {
		t.Fatalf("Reconnect = %+v, %v; want declared with revoked_at kept", c, err)
	}
	if c, err = d.grants.Approve(ctx, "app", "wx"); err != nil || c.RevokedAt == nil {
		t.Fatalf("approve after reconnect = %+v, %v; want revoked_at kept", c, err)
	}
}

// conformance: P3-C12.1-07
func TestReconnect(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	_, err := d.grants.Reconnect(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotFound)
	approved(t, d, "app", req("wx", "api.example.com"))
	_, err = d.grants.Reconnect(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.ConnectionNotRevoked)
	d.grants.Revoke(ctx, "app", "wx")
	c, err := d.grants.Reconnect(ctx, "app", "wx")
	if err != nil || c.Status != grants.StatusDeclared || c.ApprovedAt != nil || c.RevokedAt == nil {
		t.Fatalf("Reconnect = %+v, %v", c, err)
	}
	if d.appRows("app").Rows[0].Approved() {
		t.Fatal("a reconnected row grants before approval")
	}
}

// conformance: P3-C12.2-04
func TestAppAndSlotChecked(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	for _, app := range []string{"", strings.Repeat("a", 129), "\xff", "app\x00"} {
		_, err := d.grants.Approve(ctx, app, "wx")
		testutil.WantCode(t, err, errcode.BadRequest)
		_, err = d.proposers.ProposeUser(ctx, app, "wx", mustJSON(t, req("wx", "api.example.com")))
		testutil.WantCode(t, err, errcode.BadRequest)
	}
	for _, slot := range []string{"Wx", "-a", "a_b", strings.Repeat("a", 41)} {
		_, err := d.grants.Approve(ctx, "app", slot)
		testutil.WantCode(t, err, errcode.BadRequest)
	}
	// The app id is the host's call's, never the proposal's: a requirement
	// or a directive that names one is refused, not obeyed.
	claimed := req("wx", "api.example.com")
	claimed["appId"] = "other"
	_, err := d.proposers.ProposeUser(ctx, "app", "wx", mustJSON(t, claimed))
	testutil.WantCode(t, err, errcode.RequirementInvalid)
	_, err = d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, req("wx", "api.example.com"), map[string]any{"appId": "other"}), false)
	testutil.WantCode(t, err, errcode.DirectiveInvalid)
	if cs, _ := d.grants.Connections(ctx, "other"); len(cs) != 0 {
		t.Fatalf("a claimed app id got %d rows", len(cs))
	}
}

// conformance: P3-C12.8-01
func TestEveryWritePathLints(t *testing.T) {
	bad := req("wx", "api.example.com")
	bad["request"] = map[string]any{"headerTemplate": map[string]any{"X-Sig": "{{hmac_sha256(api_secrt, request.body)}}"}}
	_, err := grants.Admit(mustJSON(t, bad), grants.ProvenanceUser, nil)
	testutil.WantCode(t, err, errcode.RequirementInvalid)
	var ve *grants.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(fmt.Sprint(ve.Violations), "api_secrt") {
		t.Fatalf("violations = %v, want the lint's finding on api_secrt", err)
	}
	// Storage forged with the same template: approve refuses.
	d := newTestDaemon(t)
	ctx := context.Background()
	d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com")))
	err = d.store.Update(ctx, func(tx *store.Tx) error {
		row, err := tx.Connection("app", "wx")
		if err != nil {
			return err
		}
		row.RequirementJSON = string(mustJSON(t, bad))
		return tx.ForgeConnectionForTest(row)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.grants.Approve(ctx, "app", "wx")
	testutil.WantCode(t, err, errcode.RequirementInvalid)
}

// Writers racing on the same slots: every interleaving leaves the in-memory
// grant index equal to what storage committed, and the cap holds.
//
// conformance: P3-C12.2-16, P3-C12.3-01
func TestRacingWritersKeepIndexAndCap(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				slot := fmt.Sprintf("s%d", (g+i)%3)
				switch (g + i) % 6 {
				case 0:
					d.grants.Propose(ctx, "app", mustAdmit(t, req(slot, "api.example.com")))
				case 1:
					d.grants.Propose(ctx, "app", mustAdmit(t, req(slot, "api.example.com", fmt.Sprintf("h%d.example.com", i))))
				case 2:
					d.grants.Approve(ctx, "app", slot)
				case 3:
					d.grants.Reapprove(ctx, "app", slot)
				case 4:
					d.grants.Revoke(ctx, "app", slot)
				case 5:
					d.grants.Reconnect(ctx, "app", slot)
				}
				// New slots race for the cap.
				d.grants.Propose(ctx, "capped", mustAdmit(t, req(fmt.Sprintf("c%d-%d", g, i), "api.example.com")))
			}
		}()
	}
	wg.Wait()
	var rows []store.Connection
	var capped int
	d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if rows, err = tx.Connections("app"); err != nil {
			return err
		}
		capped, err = tx.CountConnections("capped")
		return err
	})
	if capped != grants.MaxSlotsPerApp {
		t.Fatalf("capped app holds %d rows, want %d", capped, grants.MaxSlotsPerApp)
	}
	want := grants.BuildAppGrants(rows)
	got := d.appRows("app")
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("index has %d rows, storage %d", len(got.Rows), len(want.Rows))
	}
	for i := range want.Rows {
		g, w := got.Rows[i], want.Rows[i]
		if g.Slot != w.Slot || g.Status != w.Status || fmt.Sprint(g.Ceiling) != fmt.Sprint(w.Ceiling) || (g.Req == nil) != (w.Req == nil) ||
			(g.Req != nil && g.Req.Canonical() != w.Req.Canonical()) {
			t.Fatalf("index row %s = %s %v, storage %s %v", w.Slot, g.Status, g.Ceiling, w.Status, w.Ceiling)
		}
	}
}

// A row that names a registry provider without its pinned values can only
// have come in past every channel (forged storage): approve freezes nothing
// from it.
//
// conformance: P3-C12.12-03
func TestApproveHoldsTheBorrowBan(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	d.putDeclared(ctx, "app", mustAdmit(t, req("music", "api.example.com")))
	forged := req("music", "collector.example.com")
	forged["provider"] = map[string]any{"name": "Spotify"}
	forge(t, d, "app", "music", func(c *store.Connection) { c.RequirementJSON = string(mustJSON(t, forged)) })
	_, err := d.grants.Approve(ctx, "app", "music")
	testutil.WantCode(t, err, errcode.RequirementInvalid)
	if c, _ := d.grants.Connection(ctx, "app", "music"); c.Status != grants.StatusDeclared {
		t.Fatalf("a forged borrow was approved: %+v", c)
	}
}

// putDeclared writes a declared row through the one writer that may
// (declaredRow), with no staging: the tests' way to set up a slot.
func (d *Daemon) putDeclared(ctx context.Context, appID string, a grants.Admitted) (grants.Connection, error) {
	return d.grants.Write(ctx, appID, a.Req.Slot, func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		return grants.DeclaredRow(tx, appID, cur, a)
	})
}
