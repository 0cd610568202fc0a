package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/starter"
)

// TestUserChannel: PUT declares; on an approved row it stages and the
// review shows the diff; on a revoked row it is refused; an invalid
// requirement is 422 with every violation.
//
// conformance: P3-C12.1-03, P3-C12.1-04, P3-C12.1-05, P3-C12.1-06
func TestUserChannel(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	p, err := c.PutConnection(ctx, "app1", "mail", requirementJSON("mail", "api.mail.example"))
	if err != nil || p.Connection.Status != "declared" || p.Connection.Provenance != "user" || p.Staged {
		t.Fatalf("PutConnection = %+v, %v, want a declared user row", p, err)
	}
	if _, err := c.Approve(ctx, "app1", "mail"); err != nil {
		t.Fatal(err)
	}
	p, err = c.PutConnection(ctx, "app1", "mail", requirementJSON("mail", "api.mail.example", "upload.mail.example"))
	if err != nil || !p.Staged || p.Connection.Status != "approved" || !p.Connection.NeedsReapproval || len(p.Connection.AllowedHosts) != 1 {
		t.Fatalf("PutConnection on approved = %+v, %v, want staged with the ceiling unchanged", p, err)
	}
	rv, err := c.Review(ctx, "app1", "mail")
	if err != nil || rv.Posture != "manual" || len(rv.Diff) == 0 || len(rv.PendingHosts) != 2 || len(rv.Hosts) != 1 {
		t.Fatalf("Review = %+v, %v", rv, err)
	}
	var found bool
	for _, d := range rv.Diff {
		found = found || strings.HasPrefix(d.Path, "declaredApiHosts") && string(d.New) == `"upload.mail.example"`
	}
	if !found {
		t.Errorf("Review diff %+v lacks the added host", rv.Diff)
	}
	if _, err := c.Reapprove(ctx, "app1", "mail"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, "app1", "mail"); err != nil {
		t.Fatal(err)
	}
	_, err = c.PutConnection(ctx, "app1", "mail", requirementJSON("mail", "api.mail.example"))
	wantAPIError(t, err, 409, errcode.ConnectionRevoked)
	_, err = c.PutConnection(ctx, "app1", "other", requirementJSON("mail", "api.mail.example"))
	wantAPIError(t, err, 400, errcode.SlotMismatch)

	bad := json.RawMessage(`{"slot":"x","kind":"api_key","provider":{"name":"Example"},"fields":[],"declaredApiHosts":["127.0.0.1"],"extra":1}`)
	_, err = c.PutConnection(ctx, "app1", "x", bad)
	wantAPIError(t, err, 422, errcode.RequirementInvalid)
	if len(err.(*Error).Details) < 2 {
		t.Errorf("details = %+v, want every violation", err.(*Error).Details)
	}
	for _, d := range err.(*Error).Details {
		if d.Path == "" || d.Rule == "" {
			t.Errorf("detail %+v lacks a path or a rule", d)
		}
	}
	resp, body := e.do(req{method: "PUT", path: "/v1/apps/app1/connections/x", header: jsonHeader("Authorization", "Bearer "+c.token), body: `{}`})
	if resp.StatusCode != 400 {
		t.Errorf("PUT without a requirement = %d %s, want 400", resp.StatusCode, body)
	}
}

// TestAssistantChannel: a directive lands with the provenance and the
// confidence snugd computes; claimed values are display-only; the review
// asks for a strong, field-by-field look.
//
// conformance: P3-C12.13-01, P3-C12.13-02, P3-C12.13-03, P3-C12.13-04, P3-C12.1-03
func TestAssistantChannel(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	dir := func(slot string, extra string) json.RawMessage {
		return json.RawMessage(`{"v":1,"kind":"connection_requirement","requirement":` + string(requirementJSON(slot, "api."+slot+".example")) + extra + `}`)
	}
	p, err := c.Directive(ctx, "app1", dir("mail", `,"confidence":0.99,"provenance":"registry"`), false)
	if err != nil || p.Connection.Provenance != "inference" || p.ClaimedProvenance != "registry" || p.ClaimedConfidence == nil || *p.ClaimedConfidence != 0.99 {
		t.Fatalf("Directive = %+v, %v, want inference with the claims shown apart", p, err)
	}
	if p.Connection.Confidence == nil || *p.Connection.Confidence == 0.99 {
		t.Errorf("confidence = %v, want snugd's own rung, not the claimed 0.99", p.Connection.Confidence)
	}
	if rv, err := c.Review(ctx, "app1", "mail"); err != nil || rv.Posture != "strong" {
		t.Errorf("Review(directive).Posture = %q, %v, want strong", rv.Posture, err)
	}
	p, err = c.Directive(ctx, "app1", dir("chat", ""), true)
	if err != nil || p.Connection.Provenance != "user_docs" {
		t.Fatalf("Directive(userDocs) = %+v, %v", p, err)
	}
	_, err = c.Directive(ctx, "app1", json.RawMessage(`{"v":2,"kind":"connection_requirement","requirement":{}}`), false)
	wantAPIError(t, err, 400, errcode.DirectiveInvalid)
	resp, _ := e.do(req{method: "POST", path: "/v1/apps/app1/directives?userDocs=yes", header: jsonHeader("Authorization", "Bearer "+c.token), body: string(dir("todo", ""))})
	if resp.StatusCode != 400 {
		t.Errorf("userDocs=yes = %d, want 400", resp.StatusCode)
	}
}

// TestInstallChannel: only a vouched starter writes rows, and then the
// bundled declaration, whatever the host sent along.
//
// conformance: P3-C12.1-11, P3-C12.1-12, P3-C12.1-13, P3-C12.1-03
func TestInstallChannel(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	cat, err := starter.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Lookup("weather")
	if !ok {
		t.Fatal("no weather starter")
	}
	changed := strings.Repeat("0", 64)
	for _, tc := range []InstallRequest{
		{StarterID: "no-such-starter", FactorySHA256: m.SHA256, CurrentSHA256: m.SHA256},
		{StarterID: "weather", FactorySHA256: changed, CurrentSHA256: m.SHA256},
		{StarterID: "weather", FactorySHA256: m.SHA256, CurrentSHA256: changed},
	} {
		_, err := c.Install(ctx, "app1", tc)
		wantAPIError(t, err, 422, errcode.StarterNotVouched)
	}
	if rows, _ := c.Connections(ctx, "app1"); len(rows) != 0 {
		t.Fatalf("unvouched installs wrote %d rows, want none", len(rows))
	}
	forged := json.RawMessage(`[` + string(requirementJSON("weather", "evil.example")) + `]`)
	ps, err := c.Install(ctx, "app1", InstallRequest{StarterID: "weather", FactorySHA256: m.SHA256, CurrentSHA256: m.SHA256, Connection: forged})
	if err != nil || len(ps) != len(m.Requirements) {
		t.Fatalf("Install = %+v, %v", ps, err)
	}
	for _, p := range ps {
		if p.Connection.Provenance != "starter" || p.Connection.Status != "declared" || bytes.Contains(p.Connection.Requirement, []byte("evil.example")) {
			t.Errorf("install proposal = %+v, want the bundled declaration, declared, provenance starter", p.Connection)
		}
		if rv, err := c.Review(ctx, "app1", p.Connection.Slot); err != nil || rv.Posture != "strong" {
			t.Errorf("Review(starter).Posture = %q, %v, want strong", rv.Posture, err)
		}
	}
}

// TestExportImportOverCtl: the file travels in the body; the export
// carries no secret; an imported row lands declared and flagged, never
// approved; the TCP listener has neither route.
//
// conformance: P3-C13-06, P3-C13-07, P3-C12.4-03, P3-C12.4-04
func TestExportImportOverCtl(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}})
	ctx := t.Context()
	const secret = "sk-live-export-never-7a2b"
	if err := e.ctl.SetCredentials(ctx, "app1", "mail", map[string]string{"api_key": secret}); err != nil {
		t.Fatal(err)
	}
	var db bytes.Buffer
	if err := e.ctl.Export(ctx, &db); err != nil {
		t.Fatalf("Export: %v", err)
	}
	if !bytes.HasPrefix(db.Bytes(), []byte("SQLite format 3\x00")) || bytes.Contains(db.Bytes(), []byte(secret)) {
		t.Fatalf("export: %d bytes, SQLite %t, holds the secret %t", db.Len(), bytes.HasPrefix(db.Bytes(), []byte("SQLite format 3")), bytes.Contains(db.Bytes(), []byte(secret)))
	}
	other := newEnv(t)
	r, err := other.ctl.Import(ctx, bytes.NewReader(db.Bytes()))
	if err != nil || r.Demoted != 1 || r.Dropped == nil {
		t.Fatalf("Import = %+v, %v, want one row demoted", r, err)
	}
	rows, _ := other.ctl.Connections(ctx, "app1")
	if len(rows) != 1 || rows[0].Status != "declared" || !rows[0].Imported || rows[0].ApprovedAt != nil {
		t.Errorf("imported rows = %+v, want one declared imported row", rows)
	}
	_, err = other.ctl.Import(ctx, strings.NewReader("not a database"))
	wantAPIError(t, err, 400, errcode.ImportInvalid)
	resp, err := other.ctl.send(ctx, http.MethodPost, "/v1/import", strings.NewReader("{}"), "application/json")
	if err == nil {
		resp.Body.Close()
	}
	wantAPIError(t, err, 415, errcode.UnsupportedMediaType)
	tok := e.pair("desktop", "")
	for _, path := range []string{"/v1/export", "/v1/import"} {
		resp, _ := e.do(req{method: "POST", path: path, header: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": sqliteType}, body: "x"})
		if resp.StatusCode != 404 {
			t.Errorf("TCP POST %s = %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestReproposingTheApprovedRequirementStagesNothing: a proposal that is
// the approved row's requirement already answers staged false and
// unchanged true (it used to say staged true with nothing staged), and
// it withdraws a change staged before; a new requirement stages.
func TestReproposingTheApprovedRequirementStagesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	same := requirementJSON("mail", "api.mail.example")
	if _, err := c.PutConnection(ctx, "app1", "mail", same); err != nil {
		t.Fatal(err)
	}
	p, err := c.PutConnection(ctx, "app1", "mail", same)
	if err != nil || p.Staged || p.Unchanged {
		t.Fatalf("the same requirement on a declared row = %+v, %v; want neither staged nor unchanged", p, err)
	}
	if _, err := c.Approve(ctx, "app1", "mail"); err != nil {
		t.Fatal(err)
	}
	p, err = c.PutConnection(ctx, "app1", "mail", same)
	if err != nil || p.Staged || !p.Unchanged || p.Connection.NeedsReapproval {
		t.Fatalf("the approved requirement again = %+v, %v; want unchanged, nothing staged", p, err)
	}
	p, err = c.PutConnection(ctx, "app1", "mail", requirementJSON("mail", "api.mail.example", "upload.mail.example"))
	if err != nil || !p.Staged || p.Unchanged || !p.Connection.NeedsReapproval {
		t.Fatalf("a changed requirement = %+v, %v; want staged", p, err)
	}
	p, err = c.PutConnection(ctx, "app1", "mail", same)
	if err != nil || p.Staged || !p.Unchanged || p.Connection.NeedsReapproval {
		t.Fatalf("the approved requirement over a staged change = %+v, %v; want unchanged, the change withdrawn", p, err)
	}
}
