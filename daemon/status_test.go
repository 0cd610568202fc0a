package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/hostauth"
)

func TestStatusReport(t *testing.T) {
	d, _, _ := newHostsDaemon(t)
	ctx := t.Context()
	approved(t, d, "app1", req("mail", "api.mail.example"))
	approved(t, d, "app1", req("gone", "api.gone.example"))
	if _, err := d.grants.Revoke(ctx, "app1", "gone"); err != nil {
		t.Fatal(err)
	}
	approved(t, d, "app2", req("chat", "api.chat.example"))
	if _, err := d.grants.StagePending(ctx, "app2", mustAdmit(t, req("chat", "api.chat.example", "upload.chat.example"))); err != nil {
		t.Fatal(err)
	}
	if _, err := d.putDeclared(ctx, "app2", mustAdmit(t, req("todo", "api.todo.example"))); err != nil {
		t.Fatal(err)
	}
	if err := d.grants.SetCredentials(ctx, "app1", "mail", map[string]string{"api_key": "sk-status-secret-123"}); err != nil {
		t.Fatal(err)
	}
	token := pairHost(t, d, hostauth.SurfaceDesktop, "")
	webPair(t, d, testVerifer)

	r, err := d.StatusReport(ctx)
	if err != nil {
		t.Fatalf("StatusReport: %v", err)
	}
	want := ConnectionCounts{Total: 4, Declared: 1, Approved: 2, Revoked: 1, NeedsReapproval: 1}
	if r.Connections != want {
		t.Errorf("Connections = %+v, want %+v", r.Connections, want)
	}
	if r.Apps != 2 || r.Hosts != (HostCounts{Paired: 1, PendingPairings: 1}) || r.DataDir != d.DataDir() || r.Helpers == nil {
		t.Errorf("StatusReport = %+v", r)
	}
	// Secret-free: neither the credential nor the host token shows.
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "sk-status-secret") || strings.Contains(string(b), token[len(hostauth.TokenPrefix):]) {
		t.Errorf("StatusReport carries a secret: %s", b)
	}
}

// TestStatusGoroutinesCtlOnly: the ctl channel sees the goroutine count, a
// paired host never does (it would show other hosts' traffic).
func TestStatusGoroutinesCtlOnly(t *testing.T) {
	d, _, _ := newHostsDaemon(t)
	r, err := d.StatusReport(t.Context())
	if err != nil || r.Goroutines <= 0 {
		t.Errorf("ctl StatusReport: goroutines %d, %v; want > 0", r.Goroutines, err)
	}
	r, err = d.StatusReport(hostauth.WithHost(t.Context(), "h_other"))
	if err != nil || r.Goroutines != 0 {
		t.Errorf("host StatusReport: goroutines %d, %v; want 0", r.Goroutines, err)
	}
}
