package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snug/snugd/api"
)

// TestCtlDoctorPortWithoutStatus: when the daemon runs but doctor cannot
// read its status (here its ctl socket is out of reach), the port check
// recognises the snugd holding the port, and this data directory's lock
// holder as its owner, instead of reporting another program; a port held
// by a program that is not snugd is still a failure.
func TestCtlDoctorPortWithoutStatus(t *testing.T) {
	td := startDaemon(t)
	sock := filepath.Join(td.dir, api.CtlSocket)
	if err := os.Rename(sock, sock+".away"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(sock+".away", sock) })
	code, out, _ := td.ctl(t, "", "doctor")
	if code != exitNo || !strings.Contains(out, "FAIL  daemon") {
		t.Errorf("doctor without the ctl socket = %d, want the daemon check to fail:\n%s", code, out)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", td.port)
	want := fmt.Sprintf("OK    port             %s answers as snugd %s, held by pid %d, which holds this data directory", addr, buildVersion(), os.Getpid())
	if !strings.Contains(out, want) {
		t.Errorf("doctor's port check does not say %q:\n%s", want, out)
	}
	if strings.Contains(out, "another program") {
		t.Errorf("doctor takes snugd for another program:\n%s", out)
	}
	os.Rename(sock+".away", sock)
	td.stop()

	// Not snugd: an HTTP server that answers health without being snugd.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok": true, "version": "1.0"}`))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	if err := os.WriteFile(filepath.Join(td.dir, configFile), fmt.Appendf(nil, `{"port": %d}`, l.Addr().(*net.TCPAddr).Port), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = td.ctl(t, "", "doctor")
	if code != exitNo || !strings.Contains(out, "FAIL  port") || !strings.Contains(out, "held by another program, not snugd") {
		t.Errorf("doctor with the port held by another program = %d:\n%s", code, out)
	}
}
