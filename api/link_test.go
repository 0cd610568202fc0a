package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/linkdevice"
)

// simHelperEnv makes this test binary the simulator helper process.
const simHelperEnv = "SNUGD_API_TEST_SIM"

func TestMain(m *testing.M) {
	if os.Getenv(simHelperEnv) == "1" {
		if err := linkdevice.RunSim(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newLinkEnv is an env whose daemon runs the simulator helper, with
// app1's sim row approved in slot chat and shared with one paired host.
func newLinkEnv(t *testing.T) (*env, *Client, string) {
	return newLinkEnvArgs(t, "--rotate", "300ms", "--codes", "50")
}

// newLinkEnvArgs is newLinkEnv with the simulator started with simArgs.
func newLinkEnvArgs(t *testing.T, simArgs ...string) (*env, *Client, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sup, err := linkdevice.New(linkdevice.Config{
		Helpers:  map[string]linkdevice.Spec{"sim": {Executable: filepath.Base(exe), Args: simArgs}},
		Dir:      filepath.Dir(exe),
		StateDir: filepath.Join(t.TempDir(), "helpers"),
		Env:      []string{simHelperEnv + "=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *daemon.Config) {
		c.Helpers = sup  // the daemon subscribes to its events
		c.Now = time.Now // a flow's deadline is a real context deadline
	})
	req, _ := json.Marshal(map[string]any{
		"slot": "chat", "provider": map[string]any{"name": "Snug Simulator"}, "kind": "linked_device",
		"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
		"declaredApiHosts": []any{"sim.sidecar.invalid"},
	})
	if _, err := e.ctl.PutConnection(t.Context(), "app1", "chat", req); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.Approve(t.Context(), "app1", "chat"); err != nil {
		t.Fatal(err)
	}
	tok := e.pair("desktop", "")
	if _, err := e.ctl.ShareApp(t.Context(), "app1", e.lastHost); err != nil {
		t.Fatal(err)
	}
	return e, e.host(tok, ""), tok
}

// TestLinkRoutes: a host starts a device link, reads the flow with its
// code, reads the code as a PNG (twice: reading consumes nothing), sees a
// rotation, and cancels; a flow id of no flow is 404, a bad format 400.
func TestLinkRoutes(t *testing.T) {
	e, host, tok := newLinkEnv(t)
	ctx := t.Context()
	f, err := host.StartLink(ctx, "app1", "chat", false)
	if err != nil {
		t.Fatalf("StartLink: %v", err)
	}
	if f.Kind != "device-link" || f.State != "qr" || f.FlowID == "" {
		t.Fatalf("StartLink = %+v", f)
	}
	var first string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if f, err = host.Flow(ctx, f.FlowID); err != nil {
			t.Fatal(err)
		}
		if first == "" && f.QR != "" {
			first = f.QR
			if f.QRExpiresAt == nil {
				t.Error("a code without qrExpiresAt")
			}
			for range 2 {
				resp, body := e.do(req{method: http.MethodGet, path: "/v1/flows/" + f.FlowID + "?format=png", header: map[string]string{"Authorization": "Bearer " + tok}})
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(body, "\x89PNG") {
					t.Fatalf("PNG = %d %s %.20q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
			}
		}
		if first != "" && f.QR != "" && f.QR != first {
			break // rotated
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rotation: %+v", f)
		}
	}
	resp, body := e.do(req{method: http.MethodGet, path: "/v1/flows/" + f.FlowID + "?format=gif", header: map[string]string{"Authorization": "Bearer " + tok}})
	if resp.StatusCode != 400 || errCode(body) != string(errcode.BadRequest) {
		t.Errorf("format=gif = %d %s", resp.StatusCode, body)
	}
	got, err := host.CancelFlow(ctx, f.FlowID)
	if err != nil || got.State != "failed" || got.QR != "" || got.Message != "the link was cancelled" {
		t.Fatalf("CancelFlow = %+v, %v", got, err)
	}
	resp, body = e.do(req{method: http.MethodGet, path: "/v1/flows/" + f.FlowID + "?format=png", header: map[string]string{"Authorization": "Bearer " + tok}})
	if resp.StatusCode != 404 {
		t.Errorf("PNG of a cancelled flow = %d %s, want 404", resp.StatusCode, body)
	}
	st, err := host.Status(ctx)
	if err != nil || len(st.Helpers) != 1 || st.Helpers[0].HelperID != "sim" || st.Helpers[0].Sessions != 1 {
		t.Errorf("status helpers = %+v, %v", st.Helpers, err)
	}
}

// TestLinkStartHelperCrashes: a helper that exits at once cannot start
// linking: link/start answers 502 NET_FETCH_FAILED, as API.md says, never
// 500 INTERNAL.
func TestLinkStartHelperCrashes(t *testing.T) {
	_, host, _ := newLinkEnvArgs(t, "--no-such-flag") // the simulator exits 1 on a flag it does not know
	_, err := host.StartLink(t.Context(), "app1", "chat", false)
	wantAPIError(t, err, http.StatusBadGateway, errcode.NetFetchFailed)
}
