package daemon

import (
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/journal"
)

// TestHostPairJournalSaysHow: a host-pair act says something true of how
// the host came: a web page's origin, or for a desktop program, which has
// none, that it was approved with its code — never `from ""`.
func TestHostPairJournalSaysHow(t *testing.T) {
	d, _, _ := newHostsDaemon(t)
	pairHost(t, d, hostauth.SurfaceDesktop, "")
	pairHost(t, d, hostauth.SurfaceWeb, webOrigin)
	entries, err := d.records.Journal(t.Context(), journal.JournalQuery{Kind: "acts"})
	if err != nil {
		t.Fatal(err)
	}
	var desktop, web string
	for _, e := range entries {
		if e.Act != journal.ActHostPair {
			continue
		}
		switch {
		case strings.Contains(e.Note, "(desktop)"):
			desktop = e.Note
		case strings.Contains(e.Note, "(web)"):
			web = e.Note
		}
	}
	if strings.Contains(desktop, `from ""`) || !strings.Contains(desktop, "with its pairing code (a program on this computer: no web origin)") {
		t.Errorf("desktop host-pair note = %q", desktop)
	}
	if !strings.Contains(web, `from "`+webOrigin+`"`) {
		t.Errorf("web host-pair note = %q, want its origin", web)
	}
}
