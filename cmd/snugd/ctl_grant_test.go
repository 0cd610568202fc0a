package main

import (
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	_ "github.com/mattn/go-sqlite3" // sql.Open("sqlite3") for a hostile import file
	"github.com/snug/snugd/api"
)

// The holes of issue 10 that lived in snugd ctl: an approval that acted on
// something nobody was shown, and text from outside that could redraw
// what the administrator reads.

// TestShownMakesHiddenCharactersVisible: bidi overrides and isolates,
// NUL, ESC sequences, zero-width characters, the BOM and bytes that are not
// UTF-8 all come out as visible escapes; ordinary text (accents, emoji,
// spaces) passes unchanged.
func TestShownMakesHiddenCharactersVisible(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mail-app", "mail-app"},
		{"café ✉ 東京", "café ✉ 東京"},
		{"evil\u202egpj.exe", `evil\u202egpj.exe`},
		{"a\u2066b\u2069c", `a\u2066b\u2069c`},
		{"nul\x00byte", `nul\x00byte`},
		{"\x1b[2J\x1b[1;1Happroved", `\x1b[2J\x1b[1;1Happroved`},
		{"zero\u200bwidth\u200djoin\ufeff", `zero\u200bwidth\u200djoin\ufeff`},
		{"line\u2028sep\rcr\ttab", `line\u2028sep\x0dcr\x09tab`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"bad\xffutf8", `bad\xffutf8`},
	}
	for _, tc := range cases {
		if got := shown(tc.in); got != tc.want {
			t.Errorf("shown(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzShown: whatever comes in, what is printed holds no character that
// does not show itself, and shown is idempotent.
func FuzzShown(f *testing.F) {
	for _, s := range []string{"plain", "evil\u202egpj", "\x1b]0;title\x07", "\xff\xfe", "a\u200bb", "\u0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := shown(s)
		if !utf8.ValidString(out) {
			t.Fatalf("shown(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if r != ' ' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || !unicode.IsGraphic(r)) {
				t.Fatalf("shown(%q) = %q keeps %U", s, out, r)
			}
		}
		if again := shown(out); again != out {
			t.Fatalf("shown is not idempotent: %q → %q", out, again)
		}
	})
}

// TestCtlRefusesASocketOthersCouldHavePlaced: another local user who can
// write the data directory, or who owns the socket, could stand up a
// listener of their own and read what the administrator sends. snugd ctl
// refuses before it connects: the fake listener never sees a connection.
func TestCtlRefusesASocketOthersCouldHavePlaced(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the data directory's ACL decides on Windows")
	}
	listen := func(t *testing.T, dir string) (*atomic.Int64, string) {
		t.Helper()
		sock := filepath.Join(dir, api.CtlSocket)
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		var accepted atomic.Int64
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		return &accepted, sock
	}
	shortDir := func(t *testing.T) string {
		t.Helper()
		d, err := os.MkdirTemp("", "sgr")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir := filepath.Join(d, "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	t.Run("data directory others may write", func(t *testing.T) {
		dir := shortDir(t)
		accepted, _ := listen(t, dir)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "", "ctl", "--data-dir", dir, "status")
		if code != exitNo || !strings.Contains(errOut, "refusing the ctl socket") || !strings.Contains(errOut, "0777") {
			t.Errorf("ctl status = %d, %q; want a refusal naming the mode", code, errOut)
		}
		if n := accepted.Load(); n != 0 {
			t.Errorf("the listener saw %d connections, want none", n)
		}
	})
	t.Run("socket owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the socket to another uid")
		}
		dir := shortDir(t)
		accepted, sock := listen(t, dir)
		if err := os.Lchown(sock, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "", "ctl", "--data-dir", dir, "status")
		if code != exitNo || !strings.Contains(errOut, "uid 4242") {
			t.Errorf("ctl status = %d, %q; want a refusal naming the owner", code, errOut)
		}
		if n := accepted.Load(); n != 0 {
			t.Errorf("the listener saw %d connections, want none", n)
		}
	})
	t.Run("a symlink in the socket's place", func(t *testing.T) {
		dir := shortDir(t)
		other := shortDir(t)
		accepted, target := listen(t, other)
		if err := os.Symlink(target, filepath.Join(dir, api.CtlSocket)); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "", "ctl", "--data-dir", dir, "status")
		if code != exitNo || !strings.Contains(errOut, "not a socket") {
			t.Errorf("ctl status = %d, %q; want a refusal", code, errOut)
		}
		if n := accepted.Load(); n != 0 {
			t.Errorf("the listener saw %d connections, want none", n)
		}
	})
}

// TestCtlApproveShowsTheReviewItBindsTo: snugd ctl approve used to approve
// whatever the row held when the call landed, showing nothing. Without a
// terminal it now refuses unless --yes, prints the review it binds to, and
// a --token of a review older than the row is REVIEW_STALE.
func TestCtlApproveShowsTheReviewItBindsTo(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	code, out, errOut := td.ctl(t, "", "approve", "trader", "coinbase-exchange")
	if code != exitUsage || !strings.Contains(errOut, "--yes") || !strings.Contains(out, "may reach    api.exchange.coinbase.com") {
		t.Fatalf("approve without a terminal = %d, %q, %q; want the review printed and --yes asked for", code, out, errOut)
	}
	if c, _ := td.d.Grants().Connection(t.Context(), "trader", "coinbase-exchange"); c.Status != "declared" {
		t.Fatalf("after a refused approve the row is %s, want declared", c.Status)
	}
	// A row a script reviews, and that changes after it read the review.
	reqOn := func(host string) []byte {
		b, _ := json.Marshal(map[string]any{
			"slot": "mail", "kind": "api_key", "provider": map[string]any{"name": "Example Mail"},
			"fields":           []any{map[string]any{"key": "api_key", "label": "API key", "type": "secret"}},
			"request":          map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}},
			"declaredApiHosts": []any{host},
		})
		return b
	}
	if _, err := td.d.Proposers().ProposeUser(t.Context(), "app", "mail", reqOn("api.example.com")); err != nil {
		t.Fatal(err)
	}
	_, out, _ = td.ctl(t, "", "review", "app", "mail", "--json")
	var rv api.ReviewResponse
	if err := json.Unmarshal([]byte(out), &rv); err != nil || rv.ReviewToken == "" {
		t.Fatalf("review --json = %q (%v), want a reviewToken", out, err)
	}
	if _, err := td.d.Proposers().ProposeUser(t.Context(), "app", "mail", reqOn("evil.example.com")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = td.ctl(t, "", "approve", "app", "mail", "--token", rv.ReviewToken)
	if code != exitNo || !strings.Contains(errOut, "REVIEW_STALE") {
		t.Errorf("approve --token <stale> = %d, %q; want REVIEW_STALE", code, errOut)
	}
	if c, _ := td.d.Grants().Connection(t.Context(), "app", "mail"); c.Status != "declared" {
		t.Fatalf("after a stale approve the row is %s, want declared", c.Status)
	}
	code, out, errOut = td.ctl(t, "", "approve", "app", "mail", "--yes")
	if code != exitOK || !strings.Contains(out, "may reach    evil.example.com") || !strings.Contains(out, "approved; it may reach: evil.example.com") {
		t.Errorf("approve --yes = %d, %q, %q; want the review shown, then approved", code, out, errOut)
	}
}

// TestCtlHostsApproveShowsTheRequestFirst: any web page can open a pairing
// for its own origin and show its code; snugd ctl hosts approve acted at
// once and named the origin only afterwards. It now prints the request —
// origin first — and without a terminal approves only with --yes; a code
// that matches no pending request is not sent to the daemon at all.
func TestCtlHostsApproveShowsTheRequestFirst(t *testing.T) {
	td := startDaemon(t)
	p, _ := td.pair(t, "Test Desktop")
	code, out, errOut := td.ctl(t, "", "hosts", "approve", p.Code)
	if code != exitUsage || !strings.Contains(errOut, "--yes") {
		t.Fatalf("hosts approve without a terminal = %d, %q, %q", code, out, errOut)
	}
	if !strings.Contains(out, "origin") || strings.Index(out, "origin") > strings.Index(out, "name") || !strings.Contains(out, "desktop") || !strings.Contains(out, "asked") {
		t.Errorf("hosts approve printed %q; want origin, then name, surface and age", out)
	}
	// /dev/null is a character device but no terminal: no question is
	// asked of it, and nothing is approved.
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	code, out, errOut = runEnv(t, null, nil, "ctl", "--data-dir", td.dir, "hosts", "approve", p.Code)
	if code != exitUsage || !strings.Contains(errOut, "not asking without a terminal") || strings.Contains(out, "[y/N]") {
		t.Errorf("hosts approve </dev/null = %d, %q, %q; want a refusal naming --yes", code, out, errOut)
	}
	if ps, _ := td.d.Hosts().Pending(t.Context()); len(ps) != 1 {
		t.Fatalf("pending pairings after a refused approve = %d, want 1", len(ps))
	}
	if code, _, errOut := td.ctl(t, "", "hosts", "approve", "ZZZZ-ZZZZ", "--yes"); code != exitNo || !strings.Contains(errOut, "no pending pairing request") {
		t.Errorf("hosts approve of an unknown code = %d, %q", code, errOut)
	}
	if code, out, _ := td.ctl(t, "", "hosts", "approve", strings.ToLower(p.Code), "--yes"); code != exitOK || !strings.Contains(out, "approved") {
		t.Errorf("hosts approve --yes = %d, %q", code, out)
	}
}

// TestCtlHostsFlagsLookalikeNames: a host may call itself "Ｗork laptop"
// (a fullwidth W); the approve prompt and hosts list show it flagged, with
// the name it looks like, not as a second "Work laptop".
func TestCtlHostsFlagsLookalikeNames(t *testing.T) {
	td := startDaemon(t)
	p, _ := td.pair(t, "Ｗork laptop")
	const flagged = `"Ｗork laptop" (looks like "Work laptop"; contains fullwidth letters)`
	_, out, _ := td.ctl(t, "", "hosts", "approve", p.Code)
	if !strings.Contains(out, "name     "+flagged+" (chosen by the host itself)") {
		t.Errorf("hosts approve printed %q; want the name flagged: %s", out, flagged)
	}
	if _, out, _ = td.ctl(t, "", "hosts", "list"); !strings.Contains(out, "calling itself "+flagged) {
		t.Errorf("hosts list printed %q; want the name flagged: %s", out, flagged)
	}
	if _, out, _ = td.ctl(t, "", "hosts", "approve", p.Code, "--yes"); !strings.Contains(out, "calling itself "+flagged+" is approved") {
		t.Errorf("hosts approve --yes printed %q; want the name flagged: %s", out, flagged)
	}
}

// TestCtlImportReportShowsHostileAppIDs: an imported file's app id is
// outside text; one carrying an ESC sequence and a right-to-left override
// is dropped, and the report prints it with both made visible.
func TestCtlImportReportShowsHostileAppIDs(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	file := filepath.Join(t.TempDir(), "export.db")
	if code, _, errOut := td.ctl(t, "", "export", file); code != exitOK {
		t.Fatalf("export = %d, %q", code, errOut)
	}
	db, err := sql.Open("sqlite3", file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE snug_connections SET app_id = ?", "\x1b[2Jtrader\u202exe"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, errOut := td.ctl(t, "", "import", file)
	if code != exitOK || !strings.Contains(out, `\x1b[2Jtrader\u202exe`) {
		t.Errorf("import = %d, %q, %q; want the dropped app id shown", code, out, errOut)
	}
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("the import report carries raw control or bidi characters: %q", out)
	}
}

// TestJSONOutputEscapesHiddenCharacters: --json output is read by people
// too; a bidi override or a zero-width space inside a string comes out as
// a \u escape, and the document decodes to the same value.
func TestJSONOutputEscapesHiddenCharacters(t *testing.T) {
	in := map[string]any{"appId": "evil\u202egpj", "note": "a\u200bb\ufeff", "plain": "café\n", "emoji": "𝄞\U000e0001"}
	var out strings.Builder
	c := &ctl{e: env{stdout: &out, stderr: &out}}
	if code := c.printJSON(in); code != exitOK {
		t.Fatalf("printJSON = %d", code)
	}
	s := out.String()
	if strings.ContainsAny(s, "\u202e\u200b\ufeff\U000e0001") || !strings.Contains(s, `evil\u202egpj`) || !strings.Contains(s, "café") {
		t.Errorf("printJSON wrote %q", s)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(s), &back); err != nil {
		t.Fatalf("the output is not JSON: %v", err)
	}
	for k, v := range in {
		if back[k] != v {
			t.Errorf("%s = %q, want %q", k, back[k], v)
		}
	}
}
