package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/requirement"

	"github.com/snug/snugd/internal/testutil"
)

// TestStatusTable: every code the table maps is registered and emittable,
// and every code of the API and the writers has a status.
func TestStatusTable(t *testing.T) {
	table := statusTable()
	for code, status := range table {
		if !errcode.Emittable(code) {
			t.Errorf("statusTable maps %s, which is not an emittable code", code)
		}
		if status < 400 || status > 599 {
			t.Errorf("statusTable[%s] = %d", code, status)
		}
	}
	registered := registeredCodes(t)
	inFrames := map[errcode.Code]bool{}
	for _, c := range registered[:23] { // the frame codes and the net registry's: they travel in frames
		inFrames[c] = true
	}
	for _, c := range registered {
		if _, ok := table[c]; !ok && !inFrames[c] {
			t.Errorf("code %s has no HTTP status", c)
		}
	}
	want := map[errcode.Code]int{
		errcode.BadRequest: 400, errcode.Unauthorized: 401, errcode.Forbidden: 403, errcode.NotFound: 404,
		errcode.ConnectionNotDeclared: 409, errcode.PayloadTooLarge: 413, errcode.UnsupportedMediaType: 415,
		errcode.RequirementInvalid: 422, errcode.RateLimited: 429, errcode.Internal: 500,
	}
	for c, s := range want {
		if table[c] != s {
			t.Errorf("statusTable[%s] = %d, want %d (API.md)", c, table[c], s)
		}
	}
}

// TestErrorShape: one shape for every refusal; a validation failure lists
// every violation as {path, rule}; an uncoded error is a bare INTERNAL
// that says nothing of its cause.
func TestErrorShape(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		err     error
		status  int
		code    errcode.Code
		details int
	}{
		{"validation", &grants.ValidationError{Violations: []requirement.Violation{{Path: "slot", Rule: "slot.pattern", Message: "x"}, {Path: "fields[0].key", Rule: "key.missing"}}}, 422, errcode.RequirementInvalid, 2},
		{"wrapped validation", fmt.Errorf("put: %w", &grants.ValidationError{Violations: []requirement.Violation{{Path: "$", Rule: "json.syntax"}}}), 422, errcode.RequirementInvalid, 1},
		{"coded", errcode.New(errcode.ConnectionRevoked, "revoked"), 409, errcode.ConnectionRevoked, 0},
		{"bare code", errcode.SlotCapReached, 409, errcode.SlotCapReached, 0},
		{"uncoded", errors.New("disk on fire at /secret/path"), 500, errcode.Internal, 0},
		{"max bytes", &http.MaxBytesError{Limit: 10}, 413, errcode.PayloadTooLarge, 0},
		{"a frame code", errcode.NetHostBlocked, 500, errcode.Internal, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			errorOf(log, tc.err).write(rec)
			var body map[string]map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			e := body["error"]
			var code errcode.Code
			json.Unmarshal(e["code"], &code)
			var details []Detail
			json.Unmarshal(e["details"], &details)
			if rec.Code != tc.status || code != tc.code || len(details) != tc.details || e["message"] == nil || e["retryable"] == nil {
				t.Errorf("errorOf(%v) = %d %s, want %d %s with %d details", tc.err, rec.Code, rec.Body, tc.status, tc.code, tc.details)
			}
			if strings.Contains(rec.Body.String(), "/secret/path") {
				t.Errorf("INTERNAL leaks its cause: %s", rec.Body)
			}
			if rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type = %q", rec.Header().Get("Content-Type"))
			}
		})
	}
}

// TestStatusesOverTheWire: the statuses of API.md, end to end.
func TestStatusesOverTheWire(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}})
	tok := e.pair("desktop", "")
	auth := jsonHeader("Authorization", "Bearer "+tok)
	tests := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"malformed JSON", req{method: "POST", path: "/v1/hosts/pair", header: jsonHeader(), body: "{"}, 400, "BAD_REQUEST"},
		{"unknown field", req{method: "POST", path: "/v1/hosts/pair", header: jsonHeader(), body: `{"name":"x","surface":"desktop","challenge":"` + testutil.ChallengeOf(verifier) + `","admin":true}`}, 400, "BAD_REQUEST"},
		{"trailing data", req{method: "POST", path: "/v1/hosts/pair", header: jsonHeader(), body: `{"name":"x","surface":"desktop","challenge":"` + testutil.ChallengeOf(verifier) + `"} {}`}, 400, "BAD_REQUEST"},
		{"no body", req{method: "POST", path: "/v1/hosts/pair", header: jsonHeader()}, 400, "BAD_REQUEST"},
		{"no token", req{method: "GET", path: "/v1/status"}, 401, "UNAUTHORIZED"},
		{"bad token", req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "Bearer nope"}}, 401, "UNAUTHORIZED"},
		{"unknown route", req{method: "GET", path: "/v1/nope", header: auth}, 404, "NOT_FOUND"},
		{"unversioned", req{method: "GET", path: "/health"}, 404, "NOT_FOUND"},
		{"escaped literal", req{method: "GET", path: "/v1/%73tatus", header: auth}, 404, "NOT_FOUND"},
		{"trailing slash", req{method: "GET", path: "/v1/status/", header: auth}, 404, "NOT_FOUND"},
		{"wrong method", req{method: "DELETE", path: "/v1/status", header: auth}, 405, "METHOD_NOT_ALLOWED"},
		{"writer refuses", req{method: "POST", path: "/v1/apps/app1/connections/mail/approve", header: auth}, 409, "CONNECTION_NOT_DECLARED"},
		{"writer with a non-empty body", req{method: "POST", path: "/v1/apps/app1/connections/mail/revoke", header: auth, body: `{"x":1}`}, 400, "BAD_REQUEST"},
		{"too large", req{method: "POST", path: "/v1/hosts/pair", header: jsonHeader(), body: strings.Repeat(" ", smallBody+1)}, 413, "PAYLOAD_TOO_LARGE"},
		{"not JSON", req{method: "POST", path: "/v1/hosts/pair", header: map[string]string{"Content-Type": "text/plain"}, body: "{}"}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"no content type", req{method: "POST", path: "/v1/hosts/pair", body: "{}"}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"control character in app id", req{method: "GET", path: "/v1/apps/a%00b/connections", header: auth}, 404, "NOT_FOUND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do(tc.r)
			if resp.StatusCode != tc.status || errCode(body) != tc.code {
				t.Errorf("%s %s = %d %s, want %d %s", tc.r.method, tc.r.path, resp.StatusCode, body, tc.status, tc.code)
			}
			if resp.Header.Get("Content-Security-Policy") != "default-src 'none'; frame-ancestors 'none'" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("security headers missing: %v", resp.Header)
			}
		})
	}
}

// TestInternalLoggedOnce: an INTERNAL the daemon built was logged where it
// happened, so the API does not log it again; an uncoded error, which no
// layer below classified, is logged here. Both answer a bare INTERNAL.
func TestInternalLoggedOnce(t *testing.T) {
	var logs testutil.LogBuffer
	log := logs.Logger()
	err := errcode.Wrap(errcode.Internal, "load hosts failed", errors.New("disk on fire"))
	if a := errorOf(log, err); a.status != http.StatusInternalServerError || a.body.Error.Code != errcode.Internal {
		t.Errorf("errorOf(%v) = %d %s, want 500 INTERNAL", err, a.status, a.body.Error.Code)
	}
	if got := logs.String(); got != "" {
		t.Errorf("errorOf(daemon INTERNAL) logged %q, want nothing", got)
	}
	a := errorOf(log, errors.New("unclassified"))
	if a.body.Error.Code != errcode.Internal || strings.Contains(a.body.Error.Message, "unclassified") {
		t.Errorf("errorOf(uncoded) = %+v, want a bare INTERNAL", a.body.Error)
	}
	if got := logs.String(); strings.Count(got, "request failed") != 1 || !strings.Contains(got, "unclassified") {
		t.Errorf("errorOf(uncoded) logged %q, want one line with the error", got)
	}
}

// registeredCodes reads every registered code, in registry order, from the
// registry's reviewed golden file (errcode's own test keeps it equal to the
// table in codes.go).
func registeredCodes(t *testing.T) []errcode.Code {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "daemon", "errcode", "testdata", "codes.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var codes []errcode.Code
	for line := range strings.Lines(string(raw)) {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		code, _, _ := strings.Cut(line, "\t")
		if _, ok := errcode.Lookup(errcode.Code(code)); !ok {
			t.Fatalf("codes.golden lists %q, which errcode does not register", code)
		}
		codes = append(codes, errcode.Code(code))
	}
	if len(codes) < 23 {
		t.Fatalf("codes.golden lists %d codes, want at least the frame codes and the net registry's 23", len(codes))
	}
	return codes
}
