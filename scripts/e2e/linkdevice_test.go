//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The linked-device scenario: the real snugd runs its own simulator helper
// (snugd helper sim, a child process: no namespace of its own), links it
// by a "scan" through the simulator's side channel, sends through the
// sidecar host, arms a standing approval, and revokes.

const simRequirement = `{
  "slot": "chat",
  "provider": {"name": "Snug Simulator"},
  "kind": "linked_device",
  "fields": [{"key": "helper_token", "label": "Helper token", "type": "secret"}],
  "declaredApiHosts": ["sim.sidecar.invalid"]
}`

// simSend is one send of the simulator's messaging API.
func simSend(pathThread, bodyThread string) (string, string) {
	return "https://sim.sidecar.invalid/v1/threads/" + pathThread + "/messages", `{"threadId":"` + bodyThread + `","text":"on my way"}`
}

// flowOf reads a flow until ok holds (bounded).
func (s *snugd) flowOf(t *testing.T, token, id string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	for range 200 { // 20 seconds at most
		var f map[string]any
		if st, raw, err := s.call(t, http.MethodGet, "/v1/flows/"+url.PathEscape(id), token, nil, &f); err != nil || st != http.StatusOK {
			t.Fatalf("GET flow = %d %s, %v", st, raw, err)
		}
		if ok(f) {
			return f
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("flow %s never reached the wanted state", id)
	return nil
}

// TestLinkDeviceE2E: link → confirmed send → standing approval for one
// thread (within the cap unattended and journaled; another thread asks; a
// disagreeing path and body refused; the kill switch holds) → revoke
// (unlinked, token gone, the next request refused), through the real
// binary.
// conformance: P3-C12.12-15, P3-C12.12-17, P3-X14-22, P3-X14-30, P3-X14-33, P3-S17-02
func TestLinkDeviceE2E(t *testing.T) {
	h := setUpHarness(t)
	bin := buildSnugd(t, h.dir)
	s := startSnugd(t, h, bin)
	token := s.pairHost(t, "E2E link")

	if st, raw, err := s.call(t, http.MethodPut, "/v1/apps/"+app+"/connections/chat", token, map[string]json.RawMessage{"requirement": json.RawMessage(simRequirement)}, nil); err != nil || st/100 != 2 {
		t.Fatalf("PUT the sim connection = %d %s, %v", st, raw, err)
	}
	if code, out, errOut := s.ctl(t, "", "approve", app, "chat", "--yes"); code != 0 {
		t.Fatalf("snugd ctl approve = %d\n%s%s", code, out, errOut)
	}

	var start struct {
		FlowID string `json:"flowId"`
	}
	if st, raw, err := s.call(t, http.MethodPost, "/v1/apps/"+app+"/connections/chat/link/start", token, map[string]any{}, &start); err != nil || st != http.StatusOK {
		t.Fatalf("link/start = %d %s, %v", st, raw, err)
	}
	f := s.flowOf(t, token, start.FlowID, func(f map[string]any) bool { q, _ := f["qr"].(string); return q != "" })
	dirs, _ := filepath.Glob(filepath.Join(s.dataDir, "helpers", "sim", "*"))
	if len(dirs) != 1 {
		t.Fatalf("session directories = %v, want one", dirs)
	}
	if err := os.WriteFile(filepath.Join(dirs[0], "scan"), []byte(f["qr"].(string)), 0o600); err != nil {
		t.Fatal(err)
	}
	f = s.flowOf(t, token, start.FlowID, func(f map[string]any) bool { return f["state"] != "qr" })
	if f["state"] != "linked" || f["label"] == "" {
		t.Fatalf("flow = %v, want linked with a label", f)
	}
	if code, out, _ := s.ctl(t, "", "connections", app, "--json"); code != 0 || !strings.Contains(out, `"linkVerifiedAt"`) {
		t.Errorf("snugd ctl connections --json = %d, lacks linkVerifiedAt\n%s", code, out)
	}
	if code, out, _ := s.ctl(t, "", "status"); code != 0 || !strings.Contains(out, "sim (running, 1 session") {
		t.Errorf("snugd ctl status = %d\n%s", code, out)
	}

	// send runs one send and, if the user is asked, answers decision.
	send := func(t *testing.T, id, pathThread, bodyThread, decision string) (asked bool, r netResponse) {
		t.Helper()
		u, body := simSend(pathThread, bodyThread)
		done := make(chan netResponse, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, _ := s.net(ctx, token, id, "POST", u, body)
			done <- r
		}()
		for range 50 {
			select {
			case r := <-done:
				return false, r
			case <-time.After(100 * time.Millisecond):
			}
			var list struct {
				Confirms []map[string]any `json:"confirms"`
			}
			s.call(t, http.MethodGet, "/v1/confirms", token, nil, &list)
			for _, c := range list.Confirms {
				if u2, _ := c["url"].(string); u2 == u {
					cid, _ := c["id"].(string)
					s.call(t, http.MethodPost, "/v1/confirms/"+url.PathEscape(cid), token, map[string]string{"decision": decision, "remember": "once"}, nil)
					return true, <-done
				}
			}
		}
		t.Fatalf("send %s neither answered nor asked", id)
		return false, r
	}

	t.Run("a send asks, then reaches the helper", func(t *testing.T) {
		asked, r := send(t, "send-1", "t-alice", "t-alice", "allow")
		if !asked || !r.OK || r.Status/100 != 2 {
			t.Fatalf("send = asked %v, %+v", asked, r)
		}
	})

	t.Run("standing approval for one thread", func(t *testing.T) {
		arm := map[string]any{"appId": app, "slot": "chat", "target": "t-bob", "trigger": "reply", "maxSends": 2, "windowSeconds": 3600, "userGesture": true}
		if st, raw, err := s.call(t, http.MethodPost, "/v1/standing", token, arm, nil); err != nil || st/100 != 2 {
			t.Fatalf("arm = %d %s, %v", st, raw, err)
		}
		for i, id := range []string{"bob-1", "bob-2"} {
			if asked, r := send(t, id, "t-bob", "t-bob", "deny"); asked || !r.OK {
				t.Fatalf("armed send %d = asked %v, %+v; want unattended", i, asked, r)
			}
		}
		if asked, _ := send(t, "bob-3", "t-bob", "t-bob", "deny"); !asked {
			t.Error("a send past the cap went out unattended")
		}
		if asked, _ := send(t, "family-1", "t-family", "t-family", "deny"); !asked {
			t.Error("another thread went out unattended")
		}
		if asked, r := send(t, "mixed-1", "t-bob", "t-family", "allow"); asked || r.Error == nil || r.Error.Code != "NET_CONFIRM_DENIED" {
			t.Errorf("disagreeing path and body = asked %v, %+v; want refused unasked", asked, r)
		}
		if code, out, _ := s.ctl(t, "", "journal", "--json"); code != 0 || strings.Count(out, `"standing-approved"`) != 2 {
			t.Errorf("snugd ctl journal --json = %d, want 2 standing-approved sends\n%s", code, out)
		}
		if st, raw, err := s.call(t, http.MethodPost, "/v1/standing/kill", token, map[string]any{}, nil); err != nil || st/100 != 2 {
			t.Fatalf("kill = %d %s, %v", st, raw, err)
		}
		if asked, _ := send(t, "bob-4", "t-bob", "t-bob", "deny"); !asked {
			t.Error("a send after the kill switch went out unattended")
		}
	})

	t.Run("a relink never loses the link", func(t *testing.T) {
		read := func(t *testing.T, id, when string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if r, err := s.net(ctx, token, id, "GET", "https://sim.sidecar.invalid/v1/threads", ""); err != nil || !r.OK || r.Status != http.StatusOK {
				t.Fatalf("a request %s = %+v, %v; want served through the link", when, r, err)
			}
		}
		read(t, "read-1", "before the relink")
		if st, raw, err := s.call(t, http.MethodPost, "/v1/apps/"+app+"/connections/chat/link/start", token, map[string]any{}, nil); err != nil || st != http.StatusConflict || !strings.Contains(string(raw), "ALREADY_CONNECTED") {
			t.Fatalf("link/start on a linked slot = %d %s, %v; want 409 ALREADY_CONNECTED", st, raw, err)
		}
		if code, out, errOut := s.ctl(t, "", "pair", "link", app, "chat"); code != 2 || !strings.Contains(errOut, "pass --yes") {
			t.Fatalf("snugd ctl pair link on a linked slot without a terminal = %d\n%s%s", code, out, errOut)
		}
		relink := func(t *testing.T) map[string]any {
			t.Helper()
			var start struct {
				FlowID string `json:"flowId"`
			}
			if st, raw, err := s.call(t, http.MethodPost, "/v1/apps/"+app+"/connections/chat/link/start", token, map[string]any{"replace": true}, &start); err != nil || st != http.StatusOK {
				t.Fatalf("link/start with replace = %d %s, %v", st, raw, err)
			}
			f := s.flowOf(t, token, start.FlowID, func(f map[string]any) bool { q, _ := f["qr"].(string); return q != "" })
			read(t, "read-during", "while the relink shows its code")
			return f
		}
		// Cancelled.
		f := relink(t)
		if st, raw, err := s.call(t, http.MethodDelete, "/v1/flows/"+url.PathEscape(f["flowId"].(string)), token, nil, nil); err != nil || st != http.StatusOK {
			t.Fatalf("cancel = %d %s, %v", st, raw, err)
		}
		read(t, "read-2", "after a cancelled relink")
		// Completed: the staged session links beside the live one.
		f = relink(t)
		if err := os.WriteFile(filepath.Join(dirs[0]+".new", "scan"), []byte(f["qr"].(string)), 0o600); err != nil {
			t.Fatal(err)
		}
		f = s.flowOf(t, token, f["flowId"].(string), func(f map[string]any) bool { return f["state"] != "qr" })
		if f["state"] != "linked" {
			t.Fatalf("relink flow = %v, want linked", f)
		}
		read(t, "read-3", "through the new link")
		if code, out, _ := s.ctl(t, "", "journal", "--json"); code != 0 || !strings.Contains(out, `"relink"`) {
			t.Errorf("snugd ctl journal --json = %d, lacks the relink act\n%s", code, out)
		}
	})

	t.Run("a crash between a relink's swap and its commit keeps the link", func(t *testing.T) {
		read := func(t *testing.T, id, when string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if r, err := s.net(ctx, token, id, "GET", "https://sim.sidecar.invalid/v1/threads", ""); err != nil || !r.OK || r.Status != http.StatusOK {
				t.Fatalf("a request %s = %+v, %v; want served through the link\n%s", when, r, err, s.log.String())
			}
		}
		// A relink shows its code: its staged session exists beside the
		// live one. kill -9 snugd, then leave the disk as a crash right
		// after the swap and before the commit would: the staged session
		// in the live directory, the live one retired, the swap record
		// naming a token the database never stored.
		var start struct {
			FlowID string `json:"flowId"`
		}
		if st, raw, err := s.call(t, http.MethodPost, "/v1/apps/"+app+"/connections/chat/link/start", token, map[string]any{"replace": true}, &start); err != nil || st != http.StatusOK {
			t.Fatalf("link/start with replace = %d %s, %v", st, raw, err)
		}
		s.flowOf(t, token, start.FlowID, func(f map[string]any) bool { q, _ := f["qr"].(string); return q != "" })
		s.cmd.Process.Kill()
		<-s.done
		waitNoProcessIn(t, dirs[0], dirs[0]+".new")
		for _, mv := range [][2]string{{dirs[0], dirs[0] + ".old"}, {dirs[0] + ".new", dirs[0]}} {
			if err := os.Rename(mv[0], mv[1]); err != nil {
				t.Fatal(err)
			}
		}
		record := `{"app_id":"` + app + `","slot":"chat","token_sha256":"` + strings.Repeat("ab", 32) + `"}`
		if err := os.WriteFile(dirs[0]+".swap", []byte(record), 0o600); err != nil {
			t.Fatal(err)
		}
		restartSnugd(t, h, s)
		read(t, "read-after-crash", "after a crash between the swap and the commit")
		for _, left := range []string{dirs[0] + ".old", dirs[0] + ".new", dirs[0] + ".swap"} {
			if _, err := os.Stat(left); !os.IsNotExist(err) {
				t.Errorf("%s after the restart: %v, want gone", filepath.Base(left), err)
			}
		}
		if !strings.Contains(s.log.String(), "the previous link is live again") {
			t.Errorf("the log does not say the previous link is live again\n%s", s.log.String())
		}
	})

	t.Run("revoke unlinks", func(t *testing.T) {
		if code, out, errOut := s.ctl(t, "", "revoke", app, "chat"); code != 0 {
			t.Fatalf("snugd ctl revoke = %d\n%s%s", code, out, errOut)
		}
		if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
			t.Errorf("session directory after revoke: %v, want removed", err)
		}
		u, body := simSend("t-bob", "t-bob")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if r, err := s.net(ctx, token, "after-revoke", "POST", u, body); err != nil || r.OK {
			t.Errorf("a send after revoke = %+v, %v; want refused", r, err)
		}
		if strings.Contains(s.log.String(), "helper_token\":\"") {
			t.Error("the log names a token value")
		}
	})
}

// waitNoProcessIn waits until no process runs in any of dirs (its working
// directory): the helpers of a killed snugd end when their input closes.
func waitNoProcessIn(t *testing.T, dirs ...string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		busy := false
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && slices.Contains(dirs, cwd) {
				busy = true
			}
		}
		if !busy {
			return
		}
	}
	t.Fatalf("a process still runs in %v", dirs)
}
