package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func webhostGet(t *testing.T, h http.Handler, path, host string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	r.Host = host
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	resp := w.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestWebhostSharesOnlyTheSDK: snugd-host.js and its .d.ts may be read by
// a page of any origin (the guide's smallest host imports them from
// another origin); nothing else the reference host serves may.
func TestWebhostSharesOnlyTheSDK(t *testing.T) {
	h, err := webhostHandler(writeDevApp(t, "Notes", `[]`))
	if err != nil {
		t.Fatal(err)
	}
	for path, shared := range map[string]bool{
		"/snugd-host.js": true, "/snugd-host.d.ts": true,
		"/": false, "/host.js": false, "/host.css": false, "/starters.json": false,
		"/starters/weather/index.html": false, "/run/weather": false, "/dev/app.json": false, "/dev/run": false,
	} {
		resp, body := webhostGet(t, h, path, "127.0.0.1:4780")
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d %s, want 200", path, resp.StatusCode, body)
			continue
		}
		got := resp.Header.Get("Access-Control-Allow-Origin")
		if shared && got != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin = %q, want * (a host elsewhere imports it)", path, got)
		}
		if !shared && got != "" {
			t.Errorf("GET %s: Access-Control-Allow-Origin = %q, want none", path, got)
		}
	}
	resp, js := webhostGet(t, h, "/snugd-host.js", "127.0.0.1:4780")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") || !strings.Contains(js, "export class Runner") {
		t.Errorf("GET /snugd-host.js = %s, %d bytes; want the SDK as JavaScript", ct, len(js))
	}
}

// TestWebhostHostHeader: a name rebound to 127.0.0.1 reads nothing.
func TestWebhostHostHeader(t *testing.T) {
	h, err := webhostHandler(nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{
		"127.0.0.1:4780": 200, "localhost:4780": 200, "[::1]:4780": 200,
		"rebind.example:4780": 403, "127.0.0.1": 403, "localhost.rebind.example:4780": 403,
	} {
		if resp, body := webhostGet(t, h, "/snugd-host.js", host); resp.StatusCode != want {
			t.Errorf("GET /snugd-host.js with Host %q = %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
}

// hostSource is CSP3's host-source with a scheme and a port, as the page
// policy writes them: a name or an IPv4 address, never an IPv6 literal,
// which the grammar has no room for (a browser drops such a source).
var hostSource = regexp.MustCompile(`^https?://(\*\.)?[a-z0-9.-]+(:(\*|[0-9]{1,5}))?$`)

// TestWebhostPagePolicy: every source of the host page's policy is one a
// browser parses.
func TestWebhostPagePolicy(t *testing.T) {
	for _, policy := range []string{hostPageCSP, runnerCSP} {
		for _, dir := range strings.Split(policy, ";") {
			f := strings.Fields(dir)
			if len(f) == 0 {
				t.Errorf("an empty directive in %q", policy)
				continue
			}
			for _, src := range f[1:] {
				switch {
				case strings.HasPrefix(src, "'") && strings.HasSuffix(src, "'"), src == "data:", src == "blob:", f[0] == "sandbox":
				case !hostSource.MatchString(src):
					t.Errorf("%s: source %q is not a valid host-source", f[0], src)
				}
			}
		}
	}
	if !strings.Contains(hostPageCSP, "connect-src 'self' http://127.0.0.1:* http://localhost:*;") {
		t.Errorf("the page policy's connect-src changed: %s", hostPageCSP)
	}
}

// TestWebhostDevApp: --app DIR serves DIR/index.html as a runner document
// (the runner CSP and its sandbox), describes it with its requirements,
// reads both again on each request, and serves no other file.
func TestWebhostDevApp(t *testing.T) {
	conns := `[{"slot": "notes", "provider": {"name": "Notes"}, "kind": "api_key"}]`
	dev := writeDevApp(t, "My Notes_app", conns)
	if dev.id != "dev-my-notes-app" {
		t.Errorf("appId = %q, want dev-my-notes-app", dev.id)
	}
	if err := os.WriteFile(filepath.Join(dev.dir, "secret.txt"), []byte("not served"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := webhostHandler(dev)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := webhostGet(t, h, "/dev/run", "127.0.0.1:4780")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != runnerCSP || !strings.Contains(body, "<title>Notes</title>") {
		t.Fatalf("GET /dev/run = %d %v %q, want the app under the runner policy", resp.StatusCode, resp.Header, body)
	}
	_, body = webhostGet(t, h, "/dev/app.json", "127.0.0.1:4780")
	var d struct {
		ID          string            `json:"id"`
		Title       string            `json:"title"`
		Connections []json.RawMessage `json:"connections"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.ID != dev.id || d.Title != "Notes" || len(d.Connections) != 1 {
		t.Fatalf("GET /dev/app.json = %s (%v), want its id, title and one requirement", body, err)
	}
	// An edit shows on the next request.
	if err := os.WriteFile(filepath.Join(dev.dir, "index.html"), []byte("<title>Notes 2</title>"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, body := webhostGet(t, h, "/dev/run", "127.0.0.1:4780"); body != "<title>Notes 2</title>" {
		t.Errorf("GET /dev/run after an edit = %q", body)
	}
	for _, path := range []string{"/dev/secret.txt", "/dev/run/secret.txt", "/dev/run/../secret.txt", "/dev/index.html", "/dev/connections.json", "/run/../dev/secret.txt"} {
		if resp, body := webhostGet(t, h, path, "127.0.0.1:4780"); resp.StatusCode == 200 || strings.Contains(body, "not served") {
			t.Errorf("GET %s = %d %q, want no file of the directory but the app", path, resp.StatusCode, body)
		}
	}
	// Without --app there is no app.
	plain, err := webhostHandler(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/app.json", "/dev/run"} {
		if resp, _ := webhostGet(t, plain, path, "127.0.0.1:4780"); resp.StatusCode != 404 {
			t.Errorf("GET %s without --app = %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestWebhostDevAppRefused: a directory that is not an app is reported
// when webhost starts, with the file and what is wrong.
func TestWebhostDevAppRefused(t *testing.T) {
	dir := t.TempDir()
	noPage := filepath.Join(dir, "empty")
	os.Mkdir(noPage, 0o700)
	badJSON := filepath.Join(dir, "bad")
	os.Mkdir(badJSON, 0o700)
	os.WriteFile(filepath.Join(badJSON, "index.html"), []byte("<p>hi"), 0o600)
	os.WriteFile(filepath.Join(badJSON, "connections.json"), []byte(`{"slot": "x"}`), 0o600)
	noSlot := filepath.Join(dir, "noslot")
	os.Mkdir(noSlot, 0o700)
	os.WriteFile(filepath.Join(noSlot, "index.html"), []byte("<p>hi"), 0o600)
	os.WriteFile(filepath.Join(noSlot, "connections.json"), []byte(`[{"kind": "api_key"}]`), 0o600)
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "is not a directory"},
		{noPage, "has no index.html"},
		{badJSON, "want a JSON array of requirements"},
		{noSlot, "requirement 1 has no slot"},
	} {
		if _, err := openDevApp(tc.dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("openDevApp(%s) = %v, want an error saying %q", filepath.Base(tc.dir), err, tc.want)
		}
	}
	var out, errb strings.Builder
	if code := cmdWebhost(t.Context(), env{stdout: &out, stderr: &errb}, []string{"--app", noPage, "--port", "1"}); code != exitUsage || !strings.Contains(errb.String(), "has no index.html") {
		t.Errorf("snugd webhost --app EMPTY = %d %q, want a usage error naming index.html", code, errb.String())
	}
}

func writeDevApp(t *testing.T, name, conns string) *devApp {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><title>Notes</title><p>notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "connections.json"), []byte(conns), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := openDevApp(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// FuzzDevAppDescribe: whatever connections.json holds, describe returns
// an error or JSON whose every requirement names a slot, and never panics.
func FuzzDevAppDescribe(f *testing.F) {
	f.Add([]byte(`[{"slot": "weather", "kind": "api_key"}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"slot": "x"}`))
	f.Add([]byte(`[{"slot": ""}, null]`))
	f.Add([]byte(`[{"slot": 1}]`))
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<title>t</title>"), 0o600); err != nil {
		f.Fatal(err)
	}
	d := &devApp{dir: dir, id: "dev-fuzz"}
	f.Fuzz(func(t *testing.T, conns []byte) {
		if err := os.WriteFile(filepath.Join(dir, "connections.json"), conns, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := d.describe()
		if err != nil {
			return
		}
		var got struct {
			Connections []struct {
				Slot string `json:"slot"`
			} `json:"connections"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("describe answered %q, not JSON: %v", b, err)
		}
		for i, c := range got.Connections {
			if c.Slot == "" {
				t.Fatalf("requirement %d of %q has no slot in %s", i, conns, b)
			}
		}
	})
}
