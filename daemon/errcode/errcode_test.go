package errcode

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/codes.golden (appends only)")

const golden = "testdata/codes.golden"

func render(entries []Entry) string {
	var b strings.Builder
	b.WriteString("# The wire error registry, in order. Append-only: rewrite with\n")
	b.WriteString("# `go test ./daemon/errcode -update`, which refuses renames, reorders and deletions.\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "%s\tretryable=%t\treserved=%t\t%s\n", e.Code, e.Retryable, e.Reserved, e.Meaning)
	}
	return b.String()
}

// goldenEntries reads the codes of the golden file, in order, with their
// reserved flags.
func goldenEntries(text string) []Entry {
	var entries []Entry
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		e := Entry{Code: Code(strings.TrimSpace(fields[0]))}
		for _, f := range fields[1:] {
			if f == "reserved=true" {
				e.Reserved = true
			}
		}
		entries = append(entries, e)
	}
	return entries
}

func codesOf(entries []Entry) []Code {
	codes := make([]Code, len(entries))
	for i, e := range entries {
		codes[i] = e.Code
	}
	return codes
}

// appendOnly returns an error naming the first golden code that the
// current list no longer holds at the same position.
func appendOnly(old []Code, cur []Entry) error {
	for i, c := range old {
		if i >= len(cur) {
			return fmt.Errorf("code %s (position %d) was deleted: codes are append-only, keep it and mark it Reserved", c, i+1)
		}
		if cur[i].Code != c {
			return fmt.Errorf("position %d was %s and is now %s: codes are never renamed, reordered or deleted", i+1, c, cur[i].Code)
		}
	}
	return nil
}

// staysReserved returns an error naming the first golden code that was
// reserved and no longer is: a reserved or retired code keeps no meaning
// forever, and giving it one again would be reuse (STYLE.md).
func staysReserved(old, cur []Entry) error {
	for i, e := range old {
		if i < len(cur) && e.Reserved && !cur[i].Reserved {
			return fmt.Errorf("code %s (position %d) is reserved and may never be given a meaning again", e.Code, i+1)
		}
	}
	return nil
}

// TestGolden keeps the registry append-only: a rename, a reorder or a
// deletion fails even with -update, and any other change shows up as a
// diff of testdata/codes.golden in review.
//
// conformance: P1-R5-01, P1-R5-02, P1-R5-03
func TestGolden(t *testing.T) {
	want, err := os.ReadFile(golden)
	if err != nil && !(*update && errors.Is(err, os.ErrNotExist)) {
		t.Fatalf("read %s: %v", golden, err)
	}
	got := render(List())
	old := goldenEntries(string(want))
	if err := appendOnly(codesOf(old), List()); err != nil {
		t.Fatal(err)
	}
	if err := staysReserved(old, List()); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != string(want) {
		t.Errorf("the registry differs from %s; if the change is an append, run go test ./daemon/errcode -update\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestAppendOnlyRefusesRenamesAndDeletions(t *testing.T) {
	old := []Code{ParseFailed, ThreadConflict, NetworkError}
	tests := []struct {
		name string
		cur  []Entry
		ok   bool
	}{
		{"same", []Entry{{Code: ParseFailed}, {Code: ThreadConflict}, {Code: NetworkError}}, true},
		{"appended", []Entry{{Code: ParseFailed}, {Code: ThreadConflict}, {Code: NetworkError}, {Code: "INTERNAL"}}, true},
		{"renamed", []Entry{{Code: ParseFailed}, {Code: "THREAD_BUSY"}, {Code: NetworkError}}, false},
		{"deleted last", []Entry{{Code: ParseFailed}, {Code: ThreadConflict}}, false},
		{"deleted middle", []Entry{{Code: ParseFailed}, {Code: NetworkError}}, false},
		{"reordered", []Entry{{Code: ThreadConflict}, {Code: ParseFailed}, {Code: NetworkError}}, false},
		{"inserted", []Entry{{Code: ParseFailed}, {Code: "INTERNAL"}, {Code: ThreadConflict}, {Code: NetworkError}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := appendOnly(old, tc.cur)
			if (err == nil) != tc.ok {
				t.Errorf("appendOnly(%v) = %v, want ok=%t", tc.cur, err, tc.ok)
			}
		})
	}
}

// TestStaysReservedRefusesReuse: -update refuses to un-reserve a code.
//
// conformance: P1-R5-03
func TestStaysReservedRefusesReuse(t *testing.T) {
	old := goldenEntries(render([]Entry{{Code: ParseFailed}, {Code: ConsentRequired, Reserved: true}}))
	if len(old) != 2 || !old[1].Reserved || old[0].Reserved {
		t.Fatalf("goldenEntries(render(…)) = %+v, want the reserved flags read back", old)
	}
	tests := []struct {
		name string
		cur  []Entry
		ok   bool
	}{
		{"unchanged", []Entry{{Code: ParseFailed}, {Code: ConsentRequired, Reserved: true}}, true},
		{"retired", []Entry{{Code: ParseFailed, Reserved: true}, {Code: ConsentRequired, Reserved: true}}, true},
		{"reused", []Entry{{Code: ParseFailed}, {Code: ConsentRequired, Meaning: "consent is needed"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := staysReserved(old, tc.cur)
			if (err == nil) != tc.ok {
				t.Errorf("staysReserved(%v) = %v, want ok=%t", tc.cur, err, tc.ok)
			}
		})
	}
}

// TestRegistry checks the spellings and flags the frame protocol sets.
//
// conformance: P1-R5-01, P1-R5-02, P1-R5-03
func TestRegistry(t *testing.T) {
	core := []string{"PARSE_FAILED", "THREAD_CONFLICT", "NETWORK_ERROR", "RESET_FAILED", "CANCELLED", "SUPERSEDED", "UNSUPPORTED_VERSION", "HOST_ERROR"}
	net := []string{"NET_INVALID_REQUEST", "NET_NOT_APPROVED", "NET_IMPORTED_UNAPPROVED", "NET_AMBIGUOUS_CONNECTION", "NET_SCHEME_BLOCKED", "NET_HOST_BLOCKED", "NET_SSRF_BLOCKED", "NET_CONFIRM_DENIED", "NET_REDIRECT_BLOCKED", "NET_SIZE_EXCEEDED", "NET_FETCH_FAILED", "NET_AUTH_FAILED"}
	reserved := []string{"CONSENT_REQUIRED", "AUTH_REQUIRED", "NET_SCRUBBED_HEADER_STRIPPED"}
	for _, c := range append(core, net...) {
		e, ok := Lookup(Code(c))
		if !ok || e.Reserved || !Emittable(Code(c)) {
			t.Errorf("Lookup(%q) = %+v, %t, want a registered, emittable code", c, e, ok)
		}
	}
	for _, c := range reserved {
		e, ok := Lookup(Code(c))
		if !ok || !e.Reserved || Emittable(Code(c)) || e.Retryable {
			t.Errorf("Lookup(%q) = %+v, %t, want a registered reserved code that is never emitted", c, e, ok)
		}
	}
	if Emittable("MALFORMED") { // Not a registered code
		t.Errorf("Emittable(%q) = true, want false", "MALFORMED")
	}
	// The frame protocol's codes open the list, in the spec's order; later codes follow.
	spec := []Code{ParseFailed, ThreadConflict, NetworkError, ResetFailed, Cancelled, Superseded, UnsupportedVersion, ConsentRequired, AuthRequired, HostError,
		NetInvalidRequest, NetNotApproved, NetImportedUnapproved, NetAmbiguousConnection, NetSchemeBlocked, NetHostBlocked, NetSSRFBlocked, NetConfirmDenied, NetRedirectBlocked, NetSizeExceeded, NetFetchFailed, NetAuthFailed, NetScrubbedHeaderStripped}
	if err := appendOnly(spec, List()); err != nil {
		t.Errorf("List() does not open with the frame protocol's codes: %v", err)
	}
	seen := map[Code]bool{}
	for i, e := range List() {
		if e.Code == "" || e.Meaning == "" {
			t.Errorf("List()[%d] = %+v, want a code and a meaning", i, e)
		}
		if strings.ToUpper(string(e.Code)) != string(e.Code) || strings.ContainsAny(string(e.Code), " -") {
			t.Errorf("List()[%d].Code = %q, want UPPER_SNAKE_CASE", i, e.Code)
		}
		if seen[e.Code] {
			t.Errorf("List() holds %s twice", e.Code)
		}
		seen[e.Code] = true
	}
}

func TestListIsACopy(t *testing.T) {
	l := List()
	l[0].Code = "CHANGED"
	if got := List()[0].Code; got != ParseFailed {
		t.Errorf("List()[0].Code after mutating a copy = %q, want %q", got, ParseFailed)
	}
}

func TestErrorIsAndUnwrap(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	err := fmt.Errorf("fetch: %w", Wrap(NetFetchFailed, "the upstream could not be reached", cause))
	if !errors.Is(err, NetFetchFailed) {
		t.Errorf("errors.Is(%v, NetFetchFailed) = false, want true", err)
	}
	if errors.Is(err, NetHostBlocked) {
		t.Errorf("errors.Is(%v, NetHostBlocked) = true, want false", err)
	}
	if !errors.Is(err, cause) {
		t.Errorf("errors.Is(%v, cause) = false, want true", err)
	}
	if got, want := New(NetHostBlocked, "host not in the ceiling").Error(), "NET_HOST_BLOCKED: host not in the ceiling"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := NetHostBlocked.Error(); got != "NET_HOST_BLOCKED" {
		t.Errorf("Code.Error() = %q, want %q", got, "NET_HOST_BLOCKED")
	}
}

type coded struct{}

func (coded) Error() string   { return "coded" }
func (coded) ErrorCode() Code { return Superseded }

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Code
		ok   bool
	}{
		{"nil", nil, "", false},
		{"plain", errors.New("x"), "", false},
		{"bare code", NetSizeExceeded, NetSizeExceeded, true},
		{"error", New(NetAuthFailed, "refresh failed"), NetAuthFailed, true},
		{"wrapped", fmt.Errorf("a: %w", New(Cancelled, "cancelled")), Cancelled, true},
		{"joined", errors.Join(errors.New("x"), fmt.Errorf("b: %w", HostError)), HostError, true},
		{"ErrorCode method", fmt.Errorf("c: %w", coded{}), Superseded, true},
		{"outermost wins", Wrap(NetFetchFailed, "x", New(NetAuthFailed, "y")), NetFetchFailed, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := CodeOf(tc.err)
			if got != tc.want || ok != tc.ok {
				t.Errorf("CodeOf(%v) = %q, %t, want %q, %t", tc.err, got, ok, tc.want, tc.ok)
			}
		})
	}
}
