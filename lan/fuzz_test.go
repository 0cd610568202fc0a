package lan

import (
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzBridgeFrom feeds arbitrary mDNS answers (instance label, TXT
// strings joined by NUL, port, one IPv4 address) to the discovery parser:
// whatever arrives, the Bridge is bounded and printable, and only an
// RFC-1918 address on 443 with a valid id is selectable.
func FuzzBridgeFrom(f *testing.F) {
	f.Add(`Hue\ Bridge\ -\ 23BFC2`, "bridgeid=001788fffe23bfc2\x00modelid=BSB002", 443, []byte{192, 168, 1, 20})
	f.Add(`\027[31m\226\128\174`, `bridgeid=\048\048\049788fffe23bfc2`+"\x00"+`modelid=\"x`, 443, []byte{203, 0, 113, 9})
	f.Add("", "=\x00bridgeid\x00BRIDGEID=001788FFFE23BFC2", 0, []byte{10, 0, 0, 1})
	f.Add(`a\`, `\999`, 65535, []byte{172, 31, 255, 255})
	f.Fuzz(func(t *testing.T, instance, txt string, port int, ip []byte) {
		a := answer{instance: instance, port: port, txt: strings.Split(txt, "\x00")}
		if v, ok := netip.AddrFromSlice(ip); ok {
			a.ipv4 = []netip.Addr{v}
		}
		b := bridgeFrom(a)
		for _, s := range []string{b.Name, b.ModelID, b.BridgeID, b.Address, b.Reason} {
			if !utf8.ValidString(s) || len(s) > 64 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Fatalf("bridgeFrom gave unprintable or long text %q", s)
			}
		}
		if b.BridgeID != "" {
			if _, ok := NormalizeBridgeID(b.BridgeID); !ok || b.BridgeID != strings.ToLower(b.BridgeID) {
				t.Fatalf("bridge id %q is not canonical", b.BridgeID)
			}
		}
		if b.Selectable {
			addr, err := ParseAddress(b.Address)
			if err != nil || !IsPrivate(addr) || b.Port != 443 || b.BridgeID == "" || b.Reason != "" {
				t.Fatalf("selectable bridge %+v breaks the rule", b)
			}
		} else if b.Reason == "" {
			t.Fatalf("unselectable bridge %+v has no reason", b)
		}
	})
}

// FuzzParseConfig: the verify probe's parser accepts only a Hue bridge's
// config, canonical and printable.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte(`{"bridgeid":"001788fffe23bfc2","modelid":"BSB003","swversion":"1","apiversion":"1.0","name":"\u0000"}`))
	f.Add([]byte(`[{"error":{"type":1,"address":"/","description":"unauthorized user"}}]`))
	f.Add([]byte(`{"bridgeid":null,"modelid":"BSB002"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := parseConfig(body)
		if err != nil {
			if err != ErrNotBridge || c != (BridgeConfig{}) {
				t.Fatalf("parseConfig refused with %v and %+v", err, c)
			}
			return
		}
		if _, ok := NormalizeBridgeID(c.BridgeID); !ok || c.BridgeID != strings.ToLower(c.BridgeID) || !isHueModel(c.ModelID) {
			t.Fatalf("parseConfig accepted %+v", c)
		}
		if strings.ContainsFunc(c.Name, func(r rune) bool { return r < 0x20 || r > 0x7e }) || len(c.Name) > 64 {
			t.Fatalf("parseConfig name %q", c.Name)
		}
	})
}

// FuzzParseLinkAnswer: the pairing answer parser returns pending, a key
// that is header-safe token text, or one of its two fixed refusals.
func FuzzParseLinkAnswer(f *testing.F) {
	f.Add([]byte(`[{"success":{"username":"83b7780291a6ceffbe0bd049104df","clientkey":"33DDF4B5E1B2C63A95E6B4FC4B8F0ABD"}}]`))
	f.Add([]byte(`[{"error":{"type":101,"address":"","description":"link button not pressed"}}]`))
	f.Add([]byte(`[{"error":{"type":7,"address":"/devicetype","description":"invalid value"}}]`))
	f.Add([]byte(`[{"success":{"username":"a\r\nb"}}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := parseLinkAnswer(body)
		switch {
		case err != nil:
			if (err != ErrBadAnswer && err != ErrPairingRefused) || a != (linkAnswer{}) {
				t.Fatalf("parseLinkAnswer refused with %v and %+v", err, a)
			}
		case a.pending:
			if a.username != "" || a.clientKey != "" {
				t.Fatalf("pending answer carries a key: %+v", a)
			}
		default:
			if !token(a.username, 128) || (a.clientKey != "" && !token(a.clientKey, 128)) {
				t.Fatalf("parseLinkAnswer accepted %+v", a)
			}
		}
	})
}

// FuzzParseResponse feeds arbitrary datagrams, as if from two devices, to
// the per-record mDNS parser and the collector: nothing panics, and every
// entry is bounded and printable, selectable only by the rule, and never
// selectable under a conflict.
func FuzzParseResponse(f *testing.F) {
	f.Add(pythonZeroconfPacket(f))
	f.Add(response(f, bridgeRecords("Hue Bridge - 23BFC2", "001788fffe23bfc2", "192.168.1.20")...))
	f.Add(response(f, "_hue._tcp.local. 4500 IN PTR a\\.b._hue._tcp.local.", "a\\.b._hue._tcp.local. 0 IN SRV 0 0 443 x.local."))
	f.Fuzz(func(t *testing.T, msg []byte) {
		parseResponse(msg)
		c := newCollector(2)
		c.add(netip.MustParseAddr("192.168.1.2"), msg)
		c.add(netip.MustParseAddr("192.168.1.3"), msg)
		d := c.result()
		if len(d.Bridges) > 2*maxPerDevice {
			t.Fatalf("%d entries from two devices", len(d.Bridges))
		}
		for _, b := range d.Bridges {
			for _, s := range []string{b.Name, b.ModelID, b.BridgeID, b.Address} {
				if len(s) > 64 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
					t.Fatalf("entry text %q", s)
				}
			}
			if strings.ContainsFunc(b.Reason, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Fatalf("reason %q", b.Reason)
			}
			if b.Selectable && (b.Conflicts != nil || b.Port != 443 || b.BridgeID == "" || b.Reason != "") {
				t.Fatalf("selectable entry %+v breaks the rule", b)
			}
			if _, err := ParseAddress(b.Address); b.Selectable && err != nil {
				t.Fatalf("selectable entry %+v at a non-private address", b)
			}
			if !b.Selectable && b.Reason == "" {
				t.Fatalf("unselectable entry %+v has no reason", b)
			}
		}
	})
}
