package main

import (
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/api"
)

// TestDoctorDisk: doctor's disk line fails, with the journal's sentence
// and the free space, while the daemon reports its journal unwritable,
// passes with the free space otherwise, and skips with no daemon.
func TestDoctorDisk(t *testing.T) {
	full := "snugd cannot record requests because its disk is full"
	tests := []struct {
		name       string
		status     *api.StatusResponse
		wantStatus string
		want       []string
	}{
		{"unwritable", &api.StatusResponse{Database: "unwritable", DatabaseMessage: full, DiskFree: 2048}, "fail", []string{full, "2.0 KiB free", "credentialed requests are refused", "/data"}},
		{"ok", &api.StatusResponse{Database: "ok", DiskFree: 3 << 30}, "ok", []string{"3.0 GiB free"}},
		{"down", nil, "skip", []string{"down"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &doctor{c: &ctl{dataDir: "/data"}, status: tc.status}
			d.checkDisk()
			if len(d.checks) != 1 {
				t.Fatalf("checkDisk added %d checks, want 1", len(d.checks))
			}
			got := d.checks[0]
			if got.Name != "disk" || got.Status != tc.wantStatus {
				t.Errorf("checkDisk = %s %s, want disk %s", got.Name, got.Status, tc.wantStatus)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Detail, w) {
					t.Errorf("checkDisk detail %q lacks %q", got.Detail, w)
				}
			}
		})
	}
}

// TestJournalRowSentUnknown: a row written before its send and never
// completed reads "sent, outcome unknown" in ctl journal.
func TestJournalRowSentUnknown(t *testing.T) {
	e := api.JournalEntryJSON{ID: 7, At: api.Time{Time: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}, AppID: "app1", Slot: "ex", Host: "api.example.com", Method: "POST", Outcome: api.OutcomeSentUnknown}
	row := journalRow(e)
	if row[4] != api.OutcomeSentUnknown || !strings.HasPrefix(row[5], "sent, outcome unknown") {
		t.Errorf("journalRow(sent-unknown) = %q, want outcome %s and detail \"sent, outcome unknown\"", row, api.OutcomeSentUnknown)
	}
	e.Outcome, e.Status = "sent", 201
	if row := journalRow(e); strings.Contains(row[5], "outcome unknown") {
		t.Errorf("journalRow(sent) = %q, says the outcome is unknown", row)
	}
}
