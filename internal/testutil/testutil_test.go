package testutil

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

func TestClock(t *testing.T) {
	c := NewClock(Epoch)
	c.Advance(time.Minute)
	if got := c.Now(); !got.Equal(Epoch.Add(time.Minute)) {
		t.Errorf("Now() = %v, want %v", got, Epoch.Add(time.Minute))
	}
}

func TestLogBuffer(t *testing.T) {
	var l LogBuffer
	l.Logger().Debug("hello", "k", "v")
	if got := l.String(); !strings.Contains(got, "hello") || !strings.Contains(got, "k=v") {
		t.Errorf("String() = %q, want the debug record", got)
	}
}

func TestWantCode(t *testing.T) {
	WantCode(t, errcode.New(errcode.BadRequest, "x"), errcode.BadRequest)
}

func TestChallengeOf(t *testing.T) {
	// RFC 7636, appendix B.
	if got := ChallengeOf("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Errorf("ChallengeOf = %q", got)
	}
}

// TestResolverDialer: scripted answers, recorded questions, and a dial to
// an unrouted address fails without leaving the machine.
func TestResolverDialer(t *testing.T) {
	ctx := t.Context()
	r := Resolver{Default: []netip.Addr{netip.MustParseAddr("203.0.113.1")}}
	r.Script("api.example.com", "198.51.100.7")
	r.Script("api.example.com", "198.51.100.8", "10.0.0.1")
	for i, want := range []string{"[198.51.100.7]", "[198.51.100.8 10.0.0.1]", "[198.51.100.8 10.0.0.1]"} {
		if as, err := r.LookupNetIP(ctx, "ip", "api.example.com."); err != nil || fmt.Sprint(as) != want {
			t.Errorf("lookup %d = %v, %v, want %s", i, as, err, want)
		}
	}
	if as, err := r.LookupNetIP(ctx, "ip", "other.example"); err != nil || fmt.Sprint(as) != "[203.0.113.1]" {
		t.Errorf("LookupNetIP(unscripted) = %v, %v, want Default", as, err)
	}
	r.Fail(errors.New("down"))
	if _, err := r.LookupNetIP(ctx, "ip", "other.example"); err == nil {
		t.Error("LookupNetIP after Fail = nil error")
	}
	if got := r.Asked(); len(got) != 5 || got[0] != "api.example.com" || got[4] != "other.example" {
		t.Errorf("Asked() = %q", got)
	}
	if got := r.Queries(); len(got) != 5 || got[0] != "api.example.com." || got[4] != "other.example" {
		t.Errorf("Queries() = %q, want the names as asked", got)
	}
	if n := r.Lookups(); n != 5 {
		t.Errorf("Lookups() = %d, want 5", n)
	}
	if _, err := (NoNetwork{}).LookupNetIP(ctx, "ip", "x"); err == nil {
		t.Error("NoNetwork resolved")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var d Dialer
	d.Route("198.51.100.7:443", ln.Addr().String())
	c, err := d.Dial(ctx, "tcp", "198.51.100.7:443")
	if err != nil {
		t.Fatalf("Dial(routed) = %v", err)
	}
	c.Close()
	if _, err := d.Dial(ctx, "tcp", "203.0.113.9:443"); err == nil {
		t.Error("Dial(unrouted) = nil error")
	}
	if got := d.Dials(); !slices.Equal(got, []string{"198.51.100.7:443", "203.0.113.9:443"}) {
		t.Errorf("Dials() = %q", got)
	}
	d.RoutePort("80", ln.Addr().String())
	if c, err := d.Dial(ctx, "tcp", "203.0.113.9:80"); err != nil {
		t.Errorf("Dial(port-routed) = %v", err)
	} else {
		c.Close()
	}
	if _, err := d.Dial(ctx, "tcp", "203.0.113.9:8080"); err == nil {
		t.Error("Dial(another port) = nil error")
	}
	d.Route("198.51.100.9:443", ln.Addr().String())
	d.Refuse("198.51.100.9:443")
	if _, err := d.Dial(ctx, "tcp", "198.51.100.9:443"); err == nil || strings.Contains(err.Error(), "198.51.100.9") {
		t.Errorf("Dial(refused) = %v, want an error that names no address", err)
	}
	d.Default = ln.Addr().String()
	if c, err := d.Dial(ctx, "tcp", "203.0.113.9:443"); err != nil {
		t.Errorf("Dial(unrouted, with Default) = %v", err)
	} else {
		c.Close()
	}
}
