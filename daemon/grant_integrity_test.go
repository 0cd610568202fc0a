package daemon

import (
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/internal/testutil"
)

// The holes of issue 10 that live in the daemon: approval bound to the
// review a person saw, and an import that re-pointed a credential.

// TestApproveOfARowReplacedAfterItsReviewIsStale: a directive that lands
// between the review and the approve replaces the declared row with other
// hosts. Approval bound to the review refuses it and freezes nothing.
// conformance: P3-C12.3-21
func TestApproveOfARowReplacedAfterItsReviewIsStale(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	if _, err := d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com"))); err != nil {
		t.Fatal(err)
	}
	rv, err := d.proposers.Review(ctx, "app", "wx")
	if err != nil || rv.Token == "" {
		t.Fatalf("Review = %+v, %v; want a token", rv, err)
	}
	if _, err := d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "evil.example.com"))); err != nil {
		t.Fatal(err)
	}
	_, err = d.grants.ApproveReviewed(ctx, "app", "wx", rv.Token)
	testutil.WantCode(t, err, errcode.ReviewStale)
	c, _ := d.grants.Connection(ctx, "app", "wx")
	if c.Status != grants.StatusDeclared || c.ApprovedAt != nil {
		t.Fatalf("after a stale approve: %+v, want the row still declared", c)
	}
	_, err = d.grants.ApproveReviewed(ctx, "app", "wx", "")
	testutil.WantCode(t, err, errcode.BadRequest)
	// The review of the row as it is now approves it.
	rv, _ = d.proposers.Review(ctx, "app", "wx")
	if strings.Join(rv.Hosts, ",") != "evil.example.com" {
		t.Fatalf("review hosts = %v", rv.Hosts)
	}
	c, err = d.grants.ApproveReviewed(ctx, "app", "wx", rv.Token)
	if err != nil || strings.Join(c.AllowedHosts, ",") != "evil.example.com" {
		t.Fatalf("ApproveReviewed(fresh token) = %+v, %v", c.AllowedHosts, err)
	}
	// A token is spent by the write it allowed: the row changed.
	_, err = d.grants.ApproveReviewed(ctx, "app", "wx", rv.Token)
	testutil.WantCode(t, err, errcode.ConnectionNotDeclared)
}

// TestReapproveOfAChangeRestagedAfterItsReviewIsStale: the diff shown was
// of one staged change; another was staged before the re-approval. The
// re-approval refuses, and the grant keeps its old ceiling.
// conformance: P3-C12.3-20, P3-C12.3-21
func TestReapproveOfAChangeRestagedAfterItsReviewIsStale(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	if _, err := d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "b.example.com"))); err != nil {
		t.Fatal(err)
	}
	rv, err := d.proposers.Review(ctx, "app", "wx")
	if err != nil || len(rv.Diff) == 0 {
		t.Fatalf("Review = %+v, %v", rv, err)
	}
	if _, err := d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "evil.example.com"))); err != nil {
		t.Fatal(err)
	}
	_, err = d.grants.ReapproveReviewed(ctx, "app", "wx", rv.Token)
	testutil.WantCode(t, err, errcode.ReviewStale)
	c, _ := d.grants.Connection(ctx, "app", "wx")
	if strings.Join(c.AllowedHosts, ",") != "api.example.com" || !c.NeedsReapproval() {
		t.Fatalf("after a stale reapprove: hosts %v, pending %v; want the old ceiling and the change still staged", c.AllowedHosts, c.NeedsReapproval())
	}
	rv, _ = d.proposers.Review(ctx, "app", "wx")
	if c, err = d.grants.ReapproveReviewed(ctx, "app", "wx", rv.Token); err != nil || strings.Join(c.AllowedHosts, ",") != "api.example.com,evil.example.com" {
		t.Fatalf("ReapproveReviewed(fresh) = %v, %v", c.AllowedHosts, err)
	}
}

// TestImportNeverRepointsAStoredCredential: a file whose row for an
// approved (app, slot) names other hosts used to keep the slot's
// credential slice, so one approval later the old credential went to the
// file's hosts. The import wipes it (and the _connection state) in its
// transaction, says so per row, and the review shows the diff against the
// grant it replaced, truthfully naming it as approved here.
// conformance: P3-C12.4-03
func TestImportNeverRepointsAStoredCredential(t *testing.T) {
	src := newTestDaemon(t)
	approved(t, src, "app", req("wx", "evil.example.com"))
	approved(t, src, "app", req("same", "api.example.com"))
	path := exportOf(t, src)

	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	approved(t, d, "app", req("same", "api.example.com"))
	for _, slot := range []string{"wx", "same"} {
		if err := d.grants.SetCredentials(ctx, "app", slot, map[string]string{"api_key": "sk_canary_" + slot}); err != nil {
			t.Fatal(err)
		}
	}
	// "same" differs only in its frozen ceiling bytes: force branch 2
	// with the same requirement.
	forge(t, d, "app", "same", func(c *store.Connection) { c.AllowedHosts = `["api.example.com","old.example.com"]` })

	rep, err := d.records.Import(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	cleared := map[string]bool{}
	for _, l := range rep.Landed {
		if !l.Replaced {
			t.Errorf("landed %+v, want replaced", l)
		}
		cleared[l.Slot] = l.CredentialsCleared
	}
	if len(rep.Landed) != 2 || !cleared["wx"] || !cleared["same"] {
		t.Fatalf("report = %+v, want both rows landed with their credentials cleared", rep)
	}
	for _, slot := range []string{"wx", "same"} {
		got, err := d.grants.SlotSecrets(ctx, "app", slot)
		if err != nil || len(got) != 0 {
			t.Errorf("slot %s after import: %d secrets (%v), want none", slot, len(got), err)
		}
		if _, ok, _ := d.grants.ConnectionState(ctx, "app", slot); ok {
			t.Errorf("slot %s after import: a _connection state survived", slot)
		}
	}

	rv, err := d.proposers.Review(ctx, "app", "wx")
	if err != nil {
		t.Fatal(err)
	}
	if rv.Replaced == nil || rv.Replaced.Status != grants.StatusApproved || rv.Replaced.GrantedAt == nil || !rv.Replaced.CredentialsCleared {
		t.Fatalf("review.Replaced = %+v, want the approved grant it replaced", rv.Replaced)
	}
	var hostDiff bool
	for _, ch := range rv.ReplacedDiff {
		if strings.HasPrefix(ch.Path, "declaredApiHosts") && ch.Old != nil && ch.New != nil &&
			*ch.Old == `"api.example.com"` && *ch.New == `"evil.example.com"` {
			hostDiff = true
		}
	}
	if !hostDiff {
		t.Errorf("review.ReplacedDiff = %+v, want declaredApiHosts api.example.com → evil.example.com", rv.ReplacedDiff)
	}
	// Approving the imported row freezes the file's hosts, with nothing
	// to send to them; the replaced record goes with the import flag.
	if _, err := d.grants.ApproveReviewed(ctx, "app", "wx", rv.Token); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.grants.SlotSecrets(ctx, "app", "wx"); len(got) != 0 {
		t.Errorf("after approving the imported row: %d secrets, want none", len(got))
	}
	if rv, _ := d.proposers.Review(ctx, "app", "wx"); rv.Replaced != nil {
		t.Errorf("review after approval still shows the replaced row: %+v", rv.Replaced)
	}
}

// TestImportKeepsTheCredentialOfAnIdenticalDeclaredRow: the wipe is for
// rows that ask for something else, not for a routine sync of the same
// declared row.
func TestImportKeepsTheCredentialOfAnIdenticalDeclaredRow(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	if _, err := src.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com"))); err != nil {
		t.Fatal(err)
	}
	path := exportOf(t, src)
	d := newTestDaemon(t)
	if _, err := d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com"))); err != nil {
		t.Fatal(err)
	}
	if err := d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": "sk_kept"}); err != nil {
		t.Fatal(err)
	}
	rep, err := d.records.Import(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Landed) != 1 || !rep.Landed[0].Replaced || rep.Landed[0].CredentialsCleared {
		t.Fatalf("report = %+v, want one replaced row, credentials kept", rep)
	}
	if got, _ := d.grants.SlotSecrets(ctx, "app", "wx"); string(got["api_key"]) != "sk_kept" {
		t.Errorf("secrets after import = %d keys, want api_key kept", len(got))
	}
	rv, _ := d.proposers.Review(ctx, "app", "wx")
	if rv.Replaced == nil || rv.Replaced.Status != grants.StatusDeclared || len(rv.ReplacedDiff) != 0 {
		t.Errorf("review.Replaced = %+v diff %+v, want a declared row and no diff", rv.Replaced, rv.ReplacedDiff)
	}
}

// TestAppIDRefusesFormatCharacters: an app id that reads as another (a
// right-to-left override, a zero-width space, a BOM) is refused, as a host
// name is.
func TestAppIDRefusesFormatCharacters(t *testing.T) {
	for _, id := range []string{"app\u202egpj", "ap\u200bp", "\ufeffapp", "app\u2066x\u2069", "app\u00ad"} {
		if err := grants.CheckAppID(id); err == nil {
			t.Errorf("checkAppID(%q) = nil, want BAD_REQUEST", id)
		}
	}
	if err := grants.CheckAppID("mail-app ✉"); err != nil {
		t.Errorf("checkAppID(plain text) = %v", err)
	}
}

// TestCredentialKeyErrorsNeverQuoteASecret: a secret pasted into a key's
// seat (not a field key) never comes back in the error answer; a key that
// is a field key's shape is named.
func TestCredentialKeyErrorsNeverQuoteASecret(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	if _, err := d.putDeclared(ctx, "app", mustAdmit(t, req("wx", "api.example.com"))); err != nil {
		t.Fatal(err)
	}
	const pasted = "sk_live_AbC123+/Zz"
	for _, values := range []map[string]string{{pasted: "v"}, {pasted: ""}} {
		err := d.grants.SetCredentials(ctx, "app", "wx", values)
		if err == nil || strings.Contains(err.Error(), pasted) || strings.Contains(err.Error(), "AbC123") {
			t.Errorf("SetCredentials(pasted key) = %v, want an error that does not quote it", err)
		}
	}
	err := d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"other_key": "v"})
	if err == nil || !strings.Contains(err.Error(), `"other_key"`) {
		t.Errorf("SetCredentials(unknown field key) = %v, want it named", err)
	}
}

// TestReapproveOfARestagedChangeWithTheSameHostsIsStale: a review's token
// binds the staged change itself, not only its hosts: another change with
// the same hosts (here another header template) staged after the review
// makes the old token stale.
//
// conformance: P3-C12.3-20, P3-C12.3-21
func TestReapproveOfARestagedChangeWithTheSameHostsIsStale(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	if _, err := d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "b.example.com"))); err != nil {
		t.Fatal(err)
	}
	rv, err := d.proposers.Review(ctx, "app", "wx")
	if err != nil {
		t.Fatal(err)
	}
	other := req("wx", "api.example.com", "b.example.com")
	other["request"] = map[string]any{"headerTemplate": map[string]any{"Authorization": "Bearer {{api_key}}"}}
	if _, err := d.grants.StagePending(ctx, "app", mustAdmit(t, other)); err != nil {
		t.Fatal(err)
	}
	_, err = d.grants.ReapproveReviewed(ctx, "app", "wx", rv.Token)
	testutil.WantCode(t, err, errcode.ReviewStale)
}
