package huesim_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/snug/snugd/lan/huesim"
)

// TestShapes: the simulator answers in the bridge's documented shapes,
// byte for byte where the documentation shows bytes.
func TestShapes(t *testing.T) {
	sim, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(cl.CloseIdleConnections)
	do := func(method, path, body string, hdr ...string) (int, string, *tls.ConnectionState) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, "https://"+sim.Addr()+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.TLS
	}

	_, cfg, cs := do("GET", "/api/0/config", "")
	if want := `{"name":"Hue Bridge","datastoreversion":"172","swversion":"1972004020","apiversion":"1.72.0","mac":"00:17:88:23:bf:c2","bridgeid":"001788FFFE23BFC2","factorynew":false,"replacesbridgeid":null,"modelid":"BSB002","starterkitid":""}`; cfg != want {
		t.Errorf("GET /api/0/config = %s, want %s", cfg, want)
	}
	if cn := cs.PeerCertificates[0].Subject.CommonName; cn != "001788fffe23bfc2" {
		t.Errorf("certificate CN = %q, want the bridge id in lowercase", cn)
	}

	link := `{"devicetype":"snugd#desk","generateclientkey":true}`
	if _, got, _ := do("POST", "/api", link); got != `[{"error":{"type":101,"address":"","description":"link button not pressed"}}]` {
		t.Errorf("POST /api before the press = %s", got)
	}
	if _, got, _ := do("POST", "/api", `{"devicetype":"snugd#a-device-name-of-twenty"}`); !strings.Contains(got, `"type":7`) {
		t.Errorf("POST /api with a long device name = %s, want error 7", got)
	}
	sim.PressButton()
	_, got, _ := do("POST", "/api", link)
	m := regexp.MustCompile(`^\[\{"success":\{"username":"([A-Za-z0-9-]{40})","clientkey":"[0-9A-F]{32}"\}\}\]$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("POST /api after the press = %s, want the success shape", got)
	}
	if code, _, _ := do("GET", "/clip/v2/resource/light", "", "hue-application-key", m[1]); code != http.StatusOK {
		t.Errorf("CLIP v2 with the key = %d, want 200", code)
	}
	if code, body, _ := do("GET", "/clip/v2/resource/light", "", "hue-application-key", "wrong"); code != http.StatusForbidden || body != `{"data":[],"errors":[{"description":"unauthorized user"}]}` {
		t.Errorf("CLIP v2 with a wrong key = %d %s, want 403 unauthorized user", code, body)
	}
}

// TestDrive: the line protocol a harness in another process uses.
func TestDrive(t *testing.T) {
	sim, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	before := sim.Fingerprint()
	var out strings.Builder
	if err := sim.Drive(strings.NewReader("fingerprint\npress\nrotate\nrequests\nbogus\nvanish\n"), &out); err != nil {
		t.Fatalf("Drive = %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || lines[0] != "ok "+before || lines[1] != "ok" || lines[2] != "ok "+sim.Fingerprint() || lines[2] == lines[0] ||
		lines[3] != "ok []" || lines[4] != "error unknown command" || lines[5] != "ok" {
		t.Errorf("Drive answered %q", lines)
	}
}
