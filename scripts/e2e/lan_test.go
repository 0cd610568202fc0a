//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/lan/huesim"
)

// The Hue bridge end to end: a simulated bridge (lan/huesim) in its own
// LAN namespace on an RFC-1918 address, driven over its Drive protocol,
// and the real snugd and snugd ctl in the client namespace: collect →
// approve → pair (the bridge answers 101 until its button is pressed) →
// a CLIP v2 request with the key placed by the template → a bridge with
// another certificate at the address is refused before the key reaches
// it → re-pin. avahi-daemon publishes the bridge's _hue._tcp service in
// the LAN namespace; snugd discovers it over mDNS across the veth (never
// on the machine's own interfaces).

// lanNS is the bridge's namespace.
func lanNS() netns {
	return netns{name: "snugd-e2e-ln", cliLink: "se2e-ln0", nsLink: "se2e-ln1", cliAddr: "192.168.77.1", nsAddr: "192.168.77.10"}
}

const huesimEnv = "SNUGD_E2E_HUESIM"

// TestHuesimHelper is the bridge, the test binary re-executed inside the
// LAN namespace: it serves on $SNUGD_E2E_HUESIM:443, prints "ready", then
// answers Drive commands on stdin until stdin closes.
func TestHuesimHelper(t *testing.T) {
	addr := os.Getenv(huesimEnv)
	if addr == "" {
		t.Skip("the bridge helper runs only when the harness starts it")
	}
	ln, err := net.Listen("tcp", addr+":443")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := huesim.Start(huesim.Config{Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	sim.Drive(os.Stdin, os.Stdout)
	os.Exit(0)
}

// bridge is one running helper.
type bridge struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

// startBridge runs the helper in the LAN namespace and waits for it.
func startBridge(t *testing.T) *bridge {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", lanNS().name, self, "-test.run=^TestHuesimHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), huesimEnv+"="+lanNS().nsAddr)
	cmd.SysProcAttr = dieWithParent()
	cmd.Stderr = &testWriter{t: t, prefix: "huesim: "}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &bridge{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(b.stop)
	line, err := b.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the bridge helper did not start: %q %v", line, err)
	}
	return b
}

// drive sends one Drive command and returns its answer after "ok ".
func (b *bridge) drive(t *testing.T, cmd string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := fmt.Fprintln(b.in, cmd); err != nil {
		t.Errorf("drive %s: %v", cmd, err)
		return ""
	}
	line, err := b.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ok") {
		t.Errorf("drive %s = %q, %v", cmd, line, err)
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "ok"))
}

func (b *bridge) requests(t *testing.T) []string {
	var rs []string
	json.Unmarshal([]byte(b.drive(t, "requests")), &rs)
	return rs
}

func count(rs []string, methodPath string) int {
	n := 0
	for _, r := range rs {
		if r == methodPath {
			n++
		}
	}
	return n
}

// pressWhenAsked presses the button once snugd asked for a key (the
// bridge answered 101 at least once). Bounded: 300 polls.
func (b *bridge) pressWhenAsked(t *testing.T) chan struct{} {
	done := make(chan struct{})
	before := count(b.requests(t), "POST /api")
	go func() {
		defer close(done)
		for range 300 {
			if count(b.requests(t), "POST /api") > before {
				b.drive(t, "press")
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return done
}

func (b *bridge) stop() {
	b.in.Close()
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-done
	}
}

// setUpLAN adds the bridge's namespace beside the harness's, its veth
// created in the client namespace: nothing in the machine's own.
func setUpLAN(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	n := lanNS()
	_ = ipCmd(ctx, "netns", "del", n.name)
	t.Cleanup(func() { _ = ipCmd(context.Background(), "netns", "del", n.name) })
	if _, err := os.Stat("/run/netns/" + n.name); err == nil {
		t.Fatalf("network namespace %s exists and could not be removed", n.name)
	}
	for _, link := range []string{n.cliLink, n.nsLink} {
		if _, err := net.InterfaceByName(link); err == nil {
			t.Fatalf("the machine's own namespace has a link named %s: not the harness's; rename or remove it", link)
		}
	}
	for _, s := range [][]string{
		{"netns", "add", n.name},
		{"-n", n.name, "link", "set", "lo", "up"},
		{"-n", cliNSName, "link", "add", n.cliLink, "type", "veth", "peer", "name", n.nsLink, "netns", n.name},
		{"-n", cliNSName, "addr", "add", n.cliAddr + "/24", "dev", n.cliLink},
		{"-n", cliNSName, "link", "set", n.cliLink, "up"},
		{"-n", n.name, "addr", "add", n.nsAddr + "/24", "dev", n.nsLink},
		{"-n", n.name, "link", "set", n.nsLink, "up"},
	} {
		if err := ipCmd(ctx, s...); err != nil {
			t.Fatalf("set up the LAN namespace: %v", err)
		}
	}
}

const hueRequirement = `{
  "slot": "hue",
  "provider": {"name": "Philips Hue"},
  "kind": "api_key",
  "fields": [{"key": "application_key", "label": "Application key", "type": "secret"}],
  "request": {"headerTemplate": {"hue-application-key": "{{application_key}}"}},
  "lanHost": {"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"}
}`

// TestE2EHueBridge: the real binary pairs a bridge and stays pinned.
//
// conformance: P3-C12.11-09, P3-C12.12-15, P3-C12.12-16
func TestE2EHueBridge(t *testing.T) {
	h := setUpHarness(t)
	before := rootNetwork(t)
	setUpLAN(t)
	if after := rootNetwork(t); after != before {
		t.Fatalf("the LAN namespace changed the machine's own:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	br := startBridge(t)
	startAvahi(t)
	bin := buildSnugd(t, h.dir)
	s := startSnugd(t, h, bin)
	token := s.pairHost(t, "Me")

	var body struct {
		Requirement json.RawMessage `json:"requirement"`
	}
	body.Requirement = json.RawMessage(hueRequirement)
	if st, raw, err := s.call(t, http.MethodPut, "/v1/apps/"+app+"/connections/hue", token, body, nil); err != nil || st != http.StatusOK {
		t.Fatalf("PUT hue = %d %s %v", st, raw, err)
	}
	// Pairing before collection and approval is refused, nothing dialed.
	if st, raw, _ := s.call(t, http.MethodPost, "/v1/apps/"+app+"/connections/hue/lan/pair", token, struct{}{}, nil); st != http.StatusConflict {
		t.Errorf("pair before approval = %d %s, want 409", st, raw)
	}
	if rs := br.requests(t); len(rs) != 0 {
		t.Errorf("a refused pairing reached the bridge: %v", rs)
	}

	code, out, errOut := s.ctl(t, "", "lan", "discover")
	if code != 0 || !strings.Contains(out, "001788fffe23bfc2") || !strings.Contains(out, lanNS().nsAddr) {
		t.Fatalf("ctl lan discover = %d\n%s%s", code, out, errOut)
	}
	// No --address: snugd discovers, and --yes takes the one selectable
	// bridge.
	pressed := br.pressWhenAsked(t)
	code, out, errOut = s.ctl(t, "", "pair", "lan", app, "hue", "--yes")
	<-pressed
	pin := br.drive(t, "fingerprint")
	if code != 0 || !strings.Contains(out, "collected "+lanNS().nsAddr) || !strings.Contains(out, "press the round link button") || !strings.Contains(out, "paired "+app+"/hue") || !strings.Contains(out, pin) {
		t.Fatalf("ctl pair lan = %d\n%s%s", code, out, errOut)
	}
	if rs := br.requests(t); count(rs, "GET /api/0/config") == 0 || count(rs, "POST /api") < 2 {
		t.Errorf("bridge saw %v, want the verify probe, a 101 and the success", rs)
	}
	if code, out, _ := s.ctl(t, "", "connections", app); code != 0 || !strings.Contains(out, "sha256 "+pin) || !strings.Contains(out, "verified") {
		t.Errorf("ctl connections = %d\n%s", code, out)
	}

	clip := "https://" + lanNS().nsAddr + "/clip/v2/resource/light"
	if r := s.mustNet(t, token, "hue-1", "GET", clip, ""); !r.OK || r.Status != 200 || !strings.Contains(r.Body, "Desk lamp") {
		t.Fatalf("CLIP v2 = %s", r)
	}

	// Another device at the address: a reset bridge, or an impostor with
	// the same bridge id and a new certificate.
	br.stop()
	br = startBridge(t)
	r := s.mustNet(t, token, "hue-2", "GET", clip, "")
	if r.OK || r.code() != "NET_FETCH_FAILED" {
		t.Fatalf("request to another certificate = %s, want NET_FETCH_FAILED", r)
	}
	if rs := br.requests(t); len(rs) != 0 {
		t.Errorf("the new certificate's device got requests %v: the key may have reached it", rs)
	}
	if code, out, _ := s.ctl(t, "", "connections", app); code != 0 || !strings.Contains(out, "the bridge's certificate changed") {
		t.Errorf("ctl connections after the change = %d\n%s", code, out)
	}

	newPin := br.drive(t, "fingerprint")
	pressed = br.pressWhenAsked(t)
	code, out, errOut = s.ctl(t, "", "pair", "lan", app, "hue", "--repin", "--yes")
	<-pressed
	if code != 0 || !strings.Contains(out, "sha256 "+pin) || !strings.Contains(out, "sha256 "+newPin) || !strings.Contains(out, "paired "+app+"/hue") {
		t.Fatalf("ctl pair lan --repin = %d\n%s%s", code, out, errOut)
	}
	if r := s.mustNet(t, token, "hue-3", "GET", clip, ""); !r.OK || r.Status != 200 {
		t.Fatalf("CLIP v2 after the re-pin = %s", r)
	}
}

// startAvahi publishes the bridge's _hue._tcp service from the LAN
// namespace with avahi-daemon, an mDNS implementation independent of the
// zeroconf library snugd browses with. Its /etc/avahi and /run are its
// own (a tmpfs and a bind mount in the mount namespace ip netns exec
// makes), so the machine's avahi files are never touched, and it serves
// only the LAN namespace's veth. t.Cleanup stops it.
func startAvahi(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("avahi-daemon"); err != nil {
		t.Fatal("avahi-daemon is missing: .ci/run installs it (Debian's avahi-daemon)")
	}
	dir := t.TempDir()
	conf := `[server]
host-name=hue-e2e
domain-name=local
use-ipv4=yes
use-ipv6=no
allow-interfaces=` + lanNS().nsLink + `
enable-dbus=no
[wide-area]
enable-wide-area=no
[publish]
publish-addresses=yes
publish-hinfo=no
publish-workstation=no
publish-domain=no
[reflector]
enable-reflector=no
`
	service := `<?xml version="1.0" standalone='no'?>
<!DOCTYPE service-group SYSTEM "avahi-service.dtd">
<service-group>
  <name>Hue Bridge - 23BFC2</name>
  <service>
    <type>_hue._tcp</type>
    <port>443</port>
    <txt-record>bridgeid=001788fffe23bfc2</txt-record>
    <txt-record>modelid=BSB002</txt-record>
  </service>
</service-group>
`
	for name, data := range map[string]string{"avahi-daemon.conf": conf, "hosts": ""} {
		if err := os.WriteFile(dir+"/"+name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(dir+"/services", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/services/hue.service", []byte(service), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `mount -t tmpfs tmpfs /run && mount --bind "$1" /etc/avahi && exec avahi-daemon --no-drop-root --no-chroot --no-rlimits --debug -f "$1/avahi-daemon.conf"`
	cmd := exec.Command("ip", "netns", "exec", lanNS().name, "sh", "-c", script, "sh", dir)
	cmd.SysProcAttr = dieWithParent()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan bool, 1)
	go func() { // ends when avahi-daemon's stderr closes
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if line := sc.Text(); !sent && strings.Contains(line, "Hue Bridge - 23BFC2") && strings.Contains(line, "successfully established") {
				sent = true
				ready <- true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("avahi-daemon exited before publishing the bridge")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("avahi-daemon did not publish the bridge within 20 s")
	}
}
