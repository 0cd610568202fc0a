package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/wire"
)

// TestWritersOverTheAPI: the writers answer the row; a writer refusing a
// transition is 409 with its own code; a reconnected row discloses its
// revocation.
//
// conformance: P3-C12.1-07
func TestWritersOverTheAPI(t *testing.T) {
	e := newEnv(t, seed{app: "app 1/x", slot: "mail", status: "declared", hosts: []string{"api.mail.example"}})
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	const app = "app 1/x" // escaped in the path: a space and a slash
	row, err := c.Approve(ctx, app, "mail")
	if err != nil || row.Status != "approved" || row.AppID != app || len(row.AllowedHosts) != 1 || row.ApprovedAt == nil {
		t.Fatalf("Approve = %+v, %v", row, err)
	}
	_, err = c.Approve(ctx, app, "mail")
	wantAPIError(t, err, 409, errcode.ConnectionNotDeclared)
	_, err = c.Reapprove(ctx, app, "mail")
	wantAPIError(t, err, 409, errcode.NoPendingChange)
	rev, err := c.Revoke(ctx, app, "mail")
	if row = rev.Connection; err != nil || row.Status != "revoked" || row.RevokedAt == nil {
		t.Fatalf("Revoke = %+v, %v", row, err)
	}
	if row, err = c.Reconnect(ctx, app, "mail"); err != nil || row.Status != "declared" || row.RevokedAt == nil {
		t.Fatalf("Reconnect = %+v, %v, want declared with the revocation disclosed", row, err)
	}
	_, err = c.Approve(ctx, app, "other")
	wantAPIError(t, err, 404, errcode.ConnectionNotFound)
	_, err = c.Approve(ctx, app, "Bad_Slot")
	wantAPIError(t, err, 400, errcode.BadRequest)
	_, err = c.Approve(ctx, strings.Repeat("a", 129), "mail")
	wantAPIError(t, err, 400, errcode.BadRequest)
}

// TestCredentialsNeverEchoed: the values go in once; no answer, list,
// status or log carries them, and the database holds them sealed.
func TestCredentialsNeverEchoed(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}})
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	const secret = "sk-live-never-echoed-7d1f2a9c"
	if err := c.SetCredentials(ctx, "app1", "mail", map[string]string{"api_key": secret}); err != nil {
		t.Fatalf("SetCredentials: %v", err)
	}
	err := c.SetCredentials(ctx, "app1", "mail", map[string]string{"unknown_field": secret})
	wantAPIError(t, err, 400, errcode.FieldUnknown)
	if strings.Contains(err.Error(), secret) {
		t.Errorf("refusal echoes the value: %v", err)
	}
	rows, err := c.Connections(ctx, "app1")
	if err != nil || len(rows) != 1 || rows[0].State == nil || rows[0].State.Status != "connected" || rows[0].State.ObtainedAt == nil {
		t.Fatalf("Connections = %+v, %v, want the row connected", rows, err)
	}
	var seen []string
	b, _ := json.Marshal(rows)
	seen = append(seen, string(b))
	st, _ := c.Status(ctx)
	b, _ = json.Marshal(st)
	seen = append(seen, string(b), e.logs.String())
	for _, s := range seen {
		if strings.Contains(s, secret) {
			t.Errorf("an answer or the log carries the credential: %s", s)
		}
	}
	for _, name := range []string{"snugd.db", "snugd.db-wal"} {
		raw, _ := os.ReadFile(filepath.Join(e.dir, name))
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("%s holds the credential in clear", name)
		}
	}
}

func TestConnectionsJSON(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "declared", hosts: []string{"api.mail.example"}})
	resp, body := e.do(req{method: "GET", path: "/v1/apps/app1/connections", header: map[string]string{"Authorization": "Bearer " + e.pair("desktop", "")}})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET connections = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out struct {
		Connections []map[string]json.RawMessage `json:"connections"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Connections) != 1 {
		t.Fatalf("body %s: %v", body, err)
	}
	// API.md's fields, all present.
	for _, k := range []string{"appId", "slot", "status", "needsReapproval", "requirement", "pendingRequirement", "allowedHosts", "provenance", "confidence", "imported", "borrowed", "createdAt", "updatedAt", "approvedAt", "revokedAt", "state"} {
		if _, ok := out.Connections[0][k]; !ok {
			t.Errorf("connection lacks %q: %s", k, body)
		}
	}
}

// TestSchemas: the schemas are served byte for byte as published.
func TestSchemas(t *testing.T) {
	e := newEnv(t)
	c := e.host(e.pair("desktop", ""), "")
	types, err := c.Schemas(t.Context())
	if err != nil || len(types) != len(wire.SchemaTypes()) {
		t.Fatalf("Schemas = %v, %v", types, err)
	}
	for _, typ := range types {
		got, err := c.Schema(t.Context(), typ)
		want, _ := wire.Schema(typ)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Schema(%q) = %d bytes, %v, want the published %d bytes", typ, len(got), err, len(want))
		}
	}
	_, err = c.Schema(t.Context(), "snug:no-such-frame")
	wantAPIError(t, err, 404, errcode.NotFound)
	resp, _ := e.do(req{method: "GET", path: "/v1/schemas/snug:net-request", header: map[string]string{"Authorization": "Bearer " + e.pair("desktop", "")}})
	if ct := resp.Header.Get("Content-Type"); ct != "application/schema+json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

// TestRegistry: the registry is served as the reviewed data, to paired
// hosts only.
func TestRegistry(t *testing.T) {
	e := newEnv(t)
	c := e.host(e.pair("desktop", ""), "")
	got, err := c.Registry(t.Context())
	if err != nil {
		t.Fatalf("Registry: %v", err)
	}
	var doc struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(got, &doc); err != nil || len(doc.Entries) == 0 {
		t.Fatalf("registry document = %d entries, %v", len(doc.Entries), err)
	}
	for _, entry := range doc.Entries {
		if entry["id"] == "spotify" && entry["browserCallable"] != true {
			t.Errorf("spotify entry = %v", entry)
		}
	}
}

// TestStatus: the documented fields, and no secret.
func TestStatus(t *testing.T) {
	e := newEnv(t,
		seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}},
		seed{app: "app1", slot: "old", status: "revoked", hosts: []string{"api.old.example"}},
		seed{app: "app2", slot: "todo", status: "declared", hosts: []string{"api.todo.example"}},
	)
	tok := e.pair("desktop", "")
	st, err := e.ctl.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionCounts{Total: 3, Declared: 1, Approved: 1, Revoked: 1}
	if st.Version != testVersion || st.DataDir != e.dir || st.TransportPolicy != "desktop" || st.Apps != 2 ||
		st.Connections != want || st.Hosts.Paired != 1 || st.Listen == "" || st.Helpers == nil || st.Standing == nil || st.Goroutines <= 0 {
		t.Errorf("Status = %+v", st)
	}
	e.clock.Advance(90 * 1e9)
	st, _ = e.ctl.Status(t.Context())
	if st.UptimeSeconds != 90 {
		t.Errorf("UptimeSeconds = %d, want 90", st.UptimeSeconds)
	}
	resp, body := e.do(req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "Bearer " + tok}})
	if resp.StatusCode != http.StatusOK || strings.Contains(body, tok[len("snugh_"):]) || strings.Contains(body, `"goroutines"`) {
		t.Errorf("GET /v1/status = %d %s", resp.StatusCode, body)
	}
	for _, k := range []string{`"version"`, `"startedAt"`, `"uptimeSeconds"`, `"dataDir"`, `"transportPolicy"`, `"connections"`, `"needsReapproval"`, `"hosts"`, `"helpers"`, `"standing"`, `"pendingConfirms"`, `"database":"ok"`} {
		if !strings.Contains(body, k) {
			t.Errorf("status lacks %s: %s", k, body)
		}
	}
}
