package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/linkdevice"
)

// TestSimulatorLinksConfined: snugd helper confine starts main's
// simulator (this test binary as snugd) confined, and the simulator still
// does its whole job in its session directory: a code, a scan, the link,
// a verified token. The session reports the Landlock ABI it reached.
func TestSimulatorLinksConfined(t *testing.T) {
	probe := linkdevice.Probe()
	if !probe.Confined() {
		t.Skipf("this kernel offers no Landlock (%s): nothing to confine the simulator with", probe)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	table := helperTable(filepath.Base(exe))
	sim := table["sim"]
	sim.Args = append(append([]string{}, sim.Args...), "--rotate", "5s", "--label", "Test phone")
	table["sim"] = sim
	qrs := make(chan linkdevice.QR, 16)
	sup, err := linkdevice.New(linkdevice.Config{
		Helpers: table, Dir: filepath.Dir(exe), StateDir: filepath.Join(t.TempDir(), "data", "helpers"),
		Env:     []string{simHelperEnv + "=1"},
		Confine: []string{exe, "helper", linkdevice.ConfineCommand},
		OnEvent: func(ev linkdevice.Event) {
			if ev.Kind == linkdevice.EventQR {
				select {
				case qrs <- ev.QR:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	key := linkdevice.SessionKey{HelperID: "sim", AppID: "app1", Slot: "chat"}
	if err := sup.StartLink(t.Context(), key); err != nil {
		t.Fatalf("StartLink = %v", err)
	}
	var qr linkdevice.QR
	select {
	case qr = <-qrs:
	case <-time.After(20 * time.Second):
		t.Fatal("no code 20 s after StartLink")
	}
	dir := sup.SessionDir(key)
	if err := os.WriteFile(filepath.Join(dir, "scan.tmp"), []byte(qr.Payload+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "scan.tmp"), filepath.Join(dir, "scan")); err != nil {
		t.Fatal(err)
	}
	var p linkdevice.Poll
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && p.Token.IsZero(); time.Sleep(50 * time.Millisecond) {
		if p, err = sup.PollLink(t.Context(), key); err != nil {
			t.Fatalf("PollLink = %v", err)
		}
	}
	if p.State != linkdevice.LinkLinked || p.Token.IsZero() {
		b, _ := os.ReadFile(filepath.Join(dir, "scan.result"))
		t.Fatalf("PollLink = %+v (scan.result %q), want linked with a token", p, strings.TrimSpace(string(b)))
	}
	if v, err := sup.Verify(t.Context(), key, p.Token); err != nil || !v.Alive || v.Label != "Test phone" {
		t.Fatalf("Verify = %+v, %v; want alive as Test phone", v, err)
	}
	st := sup.Status()
	if len(st) != 1 || st[0].Confinement != probe {
		t.Errorf("Status = %+v, want one session confined as %+v", st, probe)
	}
}
