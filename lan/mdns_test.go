package lan

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// pythonZeroconfPacket is a python3-zeroconf 0.47 (Debian) responder's
// answer, as received: PTR, an NSEC whose type bitmap holds an empty
// block, SRV, A 192.168.77.10 and TXT bridgeid=001788fffe6a2b3c
// modelid=BSB002.
func pythonZeroconfPacket(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/mdns/python-zeroconf-0.47.hex")
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// response packs an mDNS response from records in zone-file form.
func response(t testing.TB, records ...string) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		m.Answer = append(m.Answer, rr)
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bridgeRecords are what a bridge named name with bridge id id announces
// at address at on port 443.
func bridgeRecords(name, id, at string) []string {
	inst := strings.ReplaceAll(name, " ", `\ `) + "._hue._tcp.local."
	host := "h" + strings.ReplaceAll(at, ".", "-") + ".local."
	return []string{
		"_hue._tcp.local. 4500 IN PTR " + inst,
		inst + " 120 IN SRV 0 0 443 " + host,
		inst + ` 4500 IN TXT "bridgeid=` + id + `" "modelid=BSB002"`,
		host + " 120 IN A " + at,
	}
}

// TestParseResponsePythonZeroconf: the python-zeroconf answer that a
// whole-message parser refuses yields the bridge, its bad NSEC skipped.
func TestParseResponsePythonZeroconf(t *testing.T) {
	pkt := pythonZeroconfPacket(t)
	if err := new(dns.Msg).Unpack(pkt); err == nil {
		t.Fatal("miekg/dns now accepts the whole message: the per-record parser is no longer what makes it readable")
	}
	rrs, ok := parseResponse(pkt)
	if !ok {
		t.Fatal("parseResponse refused the message")
	}
	var types []string
	for _, rr := range rrs {
		types = append(types, dns.TypeToString[rr.Header().Rrtype])
	}
	if got := strings.Join(types, " "); got != "PTR SRV A TXT" {
		t.Errorf("parseResponse read %s, want PTR SRV A TXT (the NSEC skipped)", got)
	}
	c := newCollector(DefaultDiscoverMax)
	c.add(netip.MustParseAddr("192.168.77.10"), pkt)
	got := c.result()
	want := []Bridge{{BridgeID: "001788fffe6a2b3c", Address: "192.168.77.10", Port: 443, Name: "Hue Bridge - 6A2B3C", ModelID: "BSB002", Selectable: true}}
	if !reflect.DeepEqual(got.Bridges, want) || got.LimitReached || got.Truncated {
		t.Errorf("collector = %+v, want %+v", got, want)
	}
}

// TestParseResponse: what is not a response is ignored; a record that
// does not parse is skipped; a header that cannot be read ends the
// message and keeps what came before.
func TestParseResponse(t *testing.T) {
	good := response(t, bridgeRecords("Hue Bridge - 23BFC2", "001788fffe23bfc2", "192.168.1.20")...)
	query := new(dns.Msg)
	query.SetQuestion("_hue._tcp.local.", dns.TypePTR)
	q, _ := query.Pack()
	withRcode := append([]byte(nil), good...)
	withRcode[3] |= 0x03
	withOpcode := append([]byte(nil), good...)
	withOpcode[2] |= 0x10
	cut := good[:len(good)-3] // the last record's data is cut short

	// An A record with five bytes of data: framed correctly, so the
	// records after it can still be found, but not an A record.
	badA := response(t, "_hue._tcp.local. 4500 IN PTR x._hue._tcp.local.", "a.local. 120 IN A 192.168.1.20", "x._hue._tcp.local. 120 IN SRV 0 0 443 a.local.")
	i := strings.Index(string(badA), "\x00\x01\x00\x01\x00\x00\x00\x78\x00\x04")
	if i < 0 {
		t.Fatal("test packet: A record not found")
	}
	badA[i+9] = 5
	badA = slices.Insert(badA, i+14, 0)

	cases := []struct {
		name  string
		msg   []byte
		ok    bool
		types string
	}{
		{"response", good, true, "PTR SRV TXT A"},
		{"query", q, false, ""},
		{"rcode", withRcode, false, ""},
		{"opcode", withOpcode, false, ""},
		{"short", good[:11], false, ""},
		{"cut record", cut, true, "PTR SRV TXT"},
		{"bad A data", badA, true, "PTR SRV"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rrs, ok := parseResponse(tc.msg)
			var types []string
			for _, rr := range rrs {
				types = append(types, dns.TypeToString[rr.Header().Rrtype])
			}
			if ok != tc.ok || strings.Join(types, " ") != tc.types {
				t.Errorf("parseResponse = %q, %v; want %q, %v", strings.Join(types, " "), ok, tc.types, tc.ok)
			}
		})
	}
}

func TestInstanceLabel(t *testing.T) {
	cases := map[string]string{
		`Hue\ Bridge\ -\ 23BFC2._hue._tcp.local.`: `Hue\ Bridge\ -\ 23BFC2`,
		`a\.b._HUE._TCP.LOCAL.`:                   `a\.b`,
		`a\\._hue._tcp.local.`:                    `a\\`,
		`a\._hue._tcp.local.`:                     "",
		`x._sub._hue._tcp.local.`:                 "",
		`._hue._tcp.local.`:                       "",
		`_hue._tcp.local.`:                        "",
		`x._http._tcp.local.`:                     "",
		`x_hue._tcp.local.`:                       "",
	}
	for in, want := range cases {
		got, ok := instanceLabel(in)
		if got != want || ok != (want != "") {
			t.Errorf("instanceLabel(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

var (
	bridgeAt   = netip.MustParseAddr("192.168.77.10")
	impostorAt = netip.MustParseAddr("192.168.77.23")
)

// TestCollectorConflicts: one bridge id or one instance name claimed at
// two addresses makes every such entry not selectable, whichever answered
// first; the same claim twice from one device, or a reflector repeating
// the bridge's own address, is no conflict.
func TestCollectorConflicts(t *testing.T) {
	const id = "001788fffe6a2b3c"
	const name = "Hue Bridge - 6A2B3C"
	t.Run("impostor first, same name and id", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		c.add(impostorAt, response(t, bridgeRecords(name, id, "192.168.77.23")...))
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		got := c.result().Bridges
		if len(got) != 2 {
			t.Fatalf("entries = %+v, want the impostor's and the bridge's", got)
		}
		for i, at := range []string{"192.168.77.23", "192.168.77.10"} {
			b := got[i]
			if b.Selectable || b.Address != at || b.BridgeID != id ||
				b.Reason != "two devices claim to be this bridge: 192.168.77.23, 192.168.77.10" ||
				!reflect.DeepEqual(b.Conflicts, []string{"192.168.77.23", "192.168.77.10"}) {
				t.Errorf("entry %d = %+v, want %s not selectable, both addresses named", i, b, at)
			}
		}
	})
	t.Run("same name, other id", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		c.add(impostorAt, response(t, bridgeRecords(name, "001788fffe000001", "192.168.77.23")...))
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		for _, b := range c.result().Bridges {
			if b.Selectable || len(b.Conflicts) != 2 {
				t.Errorf("entry %+v, want a conflict", b)
			}
		}
	})
	t.Run("same id, other name, no A record", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		recs := bridgeRecords("Living room", id, "192.168.77.23")
		c.add(impostorAt, response(t, recs[:3]...)) // its address is where it answered from
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		for _, b := range c.result().Bridges {
			if b.Selectable || !reflect.DeepEqual(b.Conflicts, []string{"192.168.77.23", "192.168.77.10"}) {
				t.Errorf("entry %+v, want a conflict naming both", b)
			}
		}
	})
	t.Run("three claimants, in the order they answered", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		third := netip.MustParseAddr("192.168.77.24")
		c.add(impostorAt, response(t, bridgeRecords(name, "001788fffe000001", "192.168.77.23")...)) // the name
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		c.add(third, response(t, bridgeRecords("Hue Bridge", id, "192.168.77.24")...)) // the id
		got := c.result().Bridges
		if len(got) != 3 || got[1].BridgeID != id ||
			got[1].Reason != "three devices claim to be this bridge: 192.168.77.23, 192.168.77.10, 192.168.77.24" {
			t.Errorf("entries = %+v, want the bridge's naming all three in answer order", got)
		}
	})
	t.Run("reflector repeats the bridge", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		c.add(impostorAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		got := c.result().Bridges
		if len(got) != 1 || !got[0].Selectable || got[0].Conflicts != nil {
			t.Errorf("entries = %+v, want one selectable bridge", got)
		}
	})
	t.Run("another device's A record is not combined", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		recs := bridgeRecords(name, id, "192.168.77.10")
		c.add(bridgeAt, response(t, recs[:3]...))
		c.add(impostorAt, response(t, recs[3]))
		got := c.result().Bridges
		if len(got) != 1 || got[0].Address != "" || got[0].Reason != ReasonNoIPv4 {
			t.Errorf("entries = %+v, want the bridge without an address", got)
		}
	})
	t.Run("goodbye", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		recs := bridgeRecords(name, id, "192.168.77.23")
		for i, r := range recs {
			recs[i] = strings.Replace(strings.Replace(r, " 4500 ", " 0 ", 1), " 120 ", " 0 ", 1)
		}
		c.add(impostorAt, response(t, recs...))
		c.add(bridgeAt, response(t, bridgeRecords(name, id, "192.168.77.10")...))
		got := c.result().Bridges
		if len(got) != 1 || !got[0].Selectable {
			t.Errorf("entries = %+v, want the bridge alone (TTL 0 records are no answer)", got)
		}
	})
}

// TestCollectorLimit: the limit counts devices with an answer that could
// be selected; junk does not consume it, one device cannot fill it, and
// reaching it is reported.
func TestCollectorLimit(t *testing.T) {
	const id = "001788fffe6a2b3c"
	bridge := response(t, bridgeRecords("Hue Bridge - 6A2B3C", id, "192.168.77.10")...)
	t.Run("junk from sixteen devices", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		for i := range 16 {
			src := netip.AddrFrom4([4]byte{192, 168, 77, byte(30 + i)})
			var recs []string
			switch i % 3 {
			case 0: // a bad id
				recs = bridgeRecords(fmt.Sprintf("junk %d", i), "not-a-bridge-id!", src.String())
			case 1: // a public address
				recs = bridgeRecords(fmt.Sprintf("junk %d", i), fmt.Sprintf("001788fffe0000%02x", i), "203.0.113.9")
			default: // another port
				recs = bridgeRecords(fmt.Sprintf("junk %d", i), fmt.Sprintf("001788fffe0000%02x", i), src.String())
				recs[1] = strings.Replace(recs[1], " 443 ", " 80 ", 1)
			}
			c.add(src, response(t, recs...))
			if c.selectable != 0 {
				t.Fatalf("junk device %d counts toward the limit", i)
			}
		}
		c.add(bridgeAt, bridge)
		got := c.result()
		if len(got.Bridges) != 17 || got.LimitReached || !got.Bridges[16].Selectable || got.Bridges[16].BridgeID != id {
			t.Errorf("result = %+v, want the junk and the bridge, selectable", got)
		}
	})
	t.Run("sixteen selectable-looking answers from one device", func(t *testing.T) {
		c := newCollector(DefaultDiscoverMax)
		var recs []string
		for i := range 16 {
			recs = append(recs, bridgeRecords(fmt.Sprintf("junk %d", i), fmt.Sprintf("001788fffe0000%02x", i), "192.168.77.23")...)
		}
		c.add(impostorAt, response(t, recs...))
		c.add(bridgeAt, bridge)
		got := c.result()
		if len(got.Bridges) != maxPerDevice+1 || !got.Truncated || got.LimitReached {
			t.Fatalf("result = %d entries, truncated %v, limit %v; want %d entries, truncated", len(got.Bridges), got.Truncated, got.LimitReached, maxPerDevice+1)
		}
		if b := got.Bridges[maxPerDevice]; !b.Selectable || b.BridgeID != id {
			t.Errorf("last entry = %+v, want the bridge", b)
		}
	})
	t.Run("limit", func(t *testing.T) {
		// Two devices' entries are listed under a limit of two; the third
		// device is not, and the answer says so.
		c := newCollector(2)
		c.add(impostorAt, response(t, bridgeRecords("a", "001788fffe000001", "192.168.77.23")...))
		c.add(impostorAt, response(t, bridgeRecords("b", "001788fffe000002", "192.168.77.23")...))
		c.add(bridgeAt, bridge)
		if got := c.result(); got.LimitReached || len(got.Bridges) != 3 {
			t.Errorf("result = %+v, want three entries from two devices, the limit not passed", got)
		}
		c.add(netip.MustParseAddr("192.168.77.30"), response(t, bridgeRecords("c", "001788fffe000003", "192.168.77.30")...))
		if got := c.result(); !got.LimitReached || len(got.Bridges) != 3 {
			t.Errorf("result = %+v, want the third device left out and the limit reached", got)
		}
	})
	t.Run("a lure inside the limit, the bridge past it", func(t *testing.T) {
		// Fifteen junk devices and a lure with the bridge's id fill the
		// limit before the bridge answers: the bridge's entry is not
		// listed, but its claim still makes the lure unselectable.
		c := newCollector(DefaultDiscoverMax)
		for i := range 15 {
			at := fmt.Sprintf("192.168.77.%d", 30+i)
			c.add(netip.MustParseAddr(at), response(t, bridgeRecords(fmt.Sprintf("junk %d", i), fmt.Sprintf("001788fffe0000%02x", i), at)...))
		}
		c.add(impostorAt, response(t, bridgeRecords("Hue Bridge - 6A2B3C", id, "192.168.77.23")...))
		c.add(bridgeAt, bridge)
		got := c.result()
		if !got.LimitReached || len(got.Bridges) != 16 {
			t.Fatalf("result = %d entries, limit %v; want 16 and the limit reached", len(got.Bridges), got.LimitReached)
		}
		if lure := got.Bridges[15]; lure.Selectable || !reflect.DeepEqual(lure.Conflicts, []string{"192.168.77.23", "192.168.77.10"}) {
			t.Errorf("lure = %+v, want not selectable, the bridge's address named", lure)
		}
	})
	t.Run("the rest of the LAN", func(t *testing.T) {
		// Every mDNS response on the link reaches the listener: devices
		// announcing other services are not tracked, however many.
		c := newCollector(DefaultDiscoverMax)
		for i := range 300 {
			src := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
			c.add(src, response(t, "printer.local. 120 IN A "+src.String(), `printer._ipp._tcp.local. 120 IN SRV 0 0 631 printer.local.`))
		}
		c.add(bridgeAt, bridge)
		got := c.result()
		if len(c.devices) != 1 || got.Truncated || len(got.Bridges) != 1 || !got.Bridges[0].Selectable {
			t.Errorf("result = %+v with %d devices tracked, want the bridge alone", got, len(c.devices))
		}
	})
	t.Run("junk listed up to the limit", func(t *testing.T) {
		c := newCollector(2)
		for i := range 5 {
			c.add(impostorAt, response(t, bridgeRecords(fmt.Sprintf("junk %d", i), "bad", "192.168.77.23")...))
		}
		c.add(bridgeAt, bridge)
		got := c.result()
		if len(got.Bridges) != 3 || !got.Truncated || !got.Bridges[2].Selectable {
			t.Errorf("result = %+v, want two junk entries, the bridge, truncated", got)
		}
	})
}
