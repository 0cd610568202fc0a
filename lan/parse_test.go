package lan

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

var hueTXT = []string{"bridgeid=001788fffe23bfc2", "modelid=BSB002"}

// TestBridgeFrom: what one mDNS answer becomes, and which answers cannot
// be chosen.
//
// conformance: P3-C12.11-01
func TestBridgeFrom(t *testing.T) {
	cases := []struct {
		name string
		in   answer
		want Bridge
	}{
		{"hue bridge", answer{`Hue\ Bridge\ -\ 23BFC2`, 443, hueTXT, addrs("192.168.1.20")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "192.168.1.20", Port: 443, Name: "Hue Bridge - 23BFC2", ModelID: "BSB002", Selectable: true}},
		{"uppercase id, keys any case", answer{"b", 443, []string{"BridgeID=001788FFFE23BFC2", "ModelId=BSB003"}, addrs("10.0.0.5")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "10.0.0.5", Port: 443, Name: "b", ModelID: "BSB003", Selectable: true}},
		{"first RFC-1918 address wins", answer{"b", 443, hueTXT, addrs("203.0.113.9", "172.16.0.9")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "172.16.0.9", Port: 443, Name: "b", ModelID: "BSB002", Selectable: true}},
		{"public address", answer{"b", 443, hueTXT, addrs("203.0.113.9")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "203.0.113.9", Port: 443, Name: "b", ModelID: "BSB002", Reason: ReasonNotPrivate}},
		{"172.32 is not private", answer{"b", 443, hueTXT, addrs("172.32.0.1")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "172.32.0.1", Port: 443, Name: "b", ModelID: "BSB002", Reason: ReasonNotPrivate}},
		{"loopback", answer{"b", 443, hueTXT, addrs("127.0.0.1")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "127.0.0.1", Port: 443, Name: "b", ModelID: "BSB002", Reason: ReasonNotPrivate}},
		{"link-local", answer{"b", 443, hueTXT, addrs("169.254.169.254")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "169.254.169.254", Port: 443, Name: "b", ModelID: "BSB002", Reason: ReasonNotPrivate}},
		{"IPv6 only", answer{"b", 443, hueTXT, addrs("fd00::1")},
			Bridge{BridgeID: "001788fffe23bfc2", Port: 443, Name: "b", ModelID: "BSB002", Reason: ReasonNoIPv4}},
		{"no bridge id", answer{"b", 443, []string{"modelid=BSB002"}, addrs("192.168.1.20")},
			Bridge{Address: "192.168.1.20", Port: 443, Name: "b", ModelID: "BSB002", Reason: ReasonNoBridgeID}},
		{"bad bridge id", answer{"b", 443, []string{"bridgeid=001788fffe23bfcz"}, addrs("192.168.1.20")},
			Bridge{Address: "192.168.1.20", Port: 443, Name: "b", Reason: ReasonNoBridgeID}},
		{"first bridgeid wins", answer{"b", 443, []string{"bridgeid=nothex", "bridgeid=001788fffe23bfc2"}, addrs("192.168.1.20")},
			Bridge{Address: "192.168.1.20", Port: 443, Name: "b", Reason: ReasonNoBridgeID}},
		{"other port", answer{"b", 8443, hueTXT, addrs("192.168.1.20")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "192.168.1.20", Port: 8443, Name: "b", ModelID: "BSB002", Reason: ReasonPort}},
		{"hostile text", answer{`\027[31mHue\"\\\ \226\128\174` + strings.Repeat("x", 100), 443, []string{"bridgeid=001788fffe23bfc2", `modelid=BSB002\010`}, addrs("192.168.1.20")},
			Bridge{BridgeID: "001788fffe23bfc2", Address: "192.168.1.20", Port: 443, Name: `[31mHue"\ ` + strings.Repeat("x", 54), Selectable: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := bridgeFrom(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("bridgeFrom(%+v) =\n%+v, want\n%+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
	cases := map[string]string{
		`plain`:          "plain",
		`Hue\ Bridge`:    "Hue Bridge",
		`a\.b`:           "a.b",
		`q\"\\`:          `q"\`,
		`\065\066`:       "AB",
		`\256`:           "256", // out of range: the digits themselves
		`\12`:            "12",
		`trailing\`:      `trailing\`,
		`\226\128\174x`:  "\u202ex",
		`modelid=\066SB`: "modelid=BSB",
	}
	for in, want := range cases {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseAddress(t *testing.T) {
	for _, s := range []string{"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.20"} {
		if a, err := ParseAddress(s); err != nil || a.String() != s {
			t.Errorf("ParseAddress(%q) = %v, %v; want it back", s, a, err)
		}
	}
	for _, s := range []string{"172.15.255.255", "172.32.0.0", "192.169.0.1", "11.0.0.1", "010.0.0.1", "10.0.0.1 ", "10.0.0.1/8", "[10.0.0.1]", "::ffff:10.0.0.1"} {
		if _, err := ParseAddress(s); !errors.Is(err, ErrNotPrivate) {
			t.Errorf("ParseAddress(%q) = %v, want ErrNotPrivate", s, err)
		}
	}
}

const goodConfig = `{"name":"Hue Bridge","datastoreversion":"172","swversion":"1972004020","apiversion":"1.72.0","mac":"00:17:88:23:bf:c2","bridgeid":"001788FFFE23BFC2","factorynew":false,"replacesbridgeid":null,"modelid":"BSB002","starterkitid":""}`

func TestParseConfig(t *testing.T) {
	got, err := parseConfig([]byte(goodConfig))
	want := BridgeConfig{BridgeID: "001788fffe23bfc2", ModelID: "BSB002", Name: "Hue Bridge", SWVersion: "1972004020", APIVersion: "1.72.0"}
	if err != nil || got != want {
		t.Fatalf("parseConfig(good) = %+v, %v; want %+v", got, err, want)
	}
	bad := []string{
		``, `null`, `[]`, `"x"`, `{}`,
		`[{"error":{"type":1,"address":"/","description":"unauthorized user"}}]`,
		strings.Replace(goodConfig, `"BSB002"`, `"BSB001"`, 1),
		strings.Replace(goodConfig, `"BSB002"`, `"bsb002"`, 1),
		strings.Replace(goodConfig, `"BSB002"`, `2`, 1),
		strings.Replace(goodConfig, `"001788FFFE23BFC2"`, `"001788FFFE23BFC"`, 1),
		strings.Replace(goodConfig, `"1972004020"`, `1972004020`, 1),
		strings.Replace(goodConfig, `"1972004020"`, `"19720x4020"`, 1),
		strings.Replace(goodConfig, `"1.72.0"`, `"1.72.0-beta"`, 1),
		strings.Replace(goodConfig, `"1.72.0"`, `"1"`, 1),
		strings.Replace(goodConfig, `,"apiversion":"1.72.0"`, ``, 1),
		goodConfig + `x`,
		`{` + strings.Repeat(" ", maxAnswerBytes) + `}`,
	}
	for _, b := range bad {
		if _, err := parseConfig([]byte(b)); err != ErrNotBridge {
			t.Errorf("parseConfig(%.80q) = %v, want ErrNotBridge", b, err)
		}
	}
	// A hostile name is kept printable and short.
	c, err := parseConfig([]byte(strings.Replace(goodConfig, `"Hue Bridge"`, `"\u001b[2J\u202eevil`+strings.Repeat("y", 80)+`"`, 1)))
	if err != nil || c.Name != "[2Jevil"+strings.Repeat("y", 57) {
		t.Errorf("parseConfig(hostile name) = %q, %v", c.Name, err)
	}
}

func TestParseLinkAnswer(t *testing.T) {
	cases := []struct {
		body string
		want linkAnswer
		err  error
	}{
		{`[{"success":{"username":"83b7780291a6ceffbe0bd049104df","clientkey":"33DDF4B5E1B2C63A95E6B4FC4B8F0ABD"}}]`, linkAnswer{username: "83b7780291a6ceffbe0bd049104df", clientKey: "33DDF4B5E1B2C63A95E6B4FC4B8F0ABD"}, nil},
		{`[{"success":{"username":"abc"}}]`, linkAnswer{username: "abc"}, nil},
		{`[{"error":{"type":101,"address":"","description":"link button not pressed"}}]`, linkAnswer{pending: true}, nil},
		{`[{"error":{"type":101}},{"success":{"username":"x"}}]`, linkAnswer{pending: true}, nil}, // the first element decides
		{`[{"error":{"type":7,"address":"/devicetype","description":"invalid value"}}]`, linkAnswer{}, ErrPairingRefused},
		{`[{"error":{"type":"101"}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"error":{}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"success":{"username":"a\r\nX-Evil: 1"}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"success":{"username":""}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"success":{"username":"` + strings.Repeat("a", 129) + `"}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"success":{"username":"ok","clientkey":"not ok"}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"success":{}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{"success":{"username":"x"},"error":{"type":101}}]`, linkAnswer{}, ErrBadAnswer},
		{`[{}]`, linkAnswer{}, ErrBadAnswer},
		{`[]`, linkAnswer{}, ErrBadAnswer},
		{`{"success":{"username":"x"}}`, linkAnswer{}, ErrBadAnswer},
		{`<html>`, linkAnswer{}, ErrBadAnswer},
		{`["x"]`, linkAnswer{}, ErrBadAnswer},
	}
	for _, tc := range cases {
		got, err := parseLinkAnswer([]byte(tc.body))
		if got != tc.want || err != tc.err {
			t.Errorf("parseLinkAnswer(%.80q) = %+v, %v; want %+v, %v", tc.body, got, err, tc.want, tc.err)
		}
	}
}
