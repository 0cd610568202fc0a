package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/api"
)

// TestJournalNewestFirst: the listing's TIME column never goes back and
// forth. A row is written when its request ends, carrying the time the
// request began, so the API's id order puts a slow request's row above a
// quicker one that began after it; ctl journal orders by time, the newer
// id first between equal times.
func TestJournalNewestFirst(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(s int) api.Time { return api.Time{Time: t0.Add(time.Duration(s) * time.Second)} }
	// As GET /v1/journal answers: id descending.
	page := []api.JournalEntryJSON{
		{ID: 5, At: at(1), Outcome: "sent"}, // slow: began at 1, written last
		{ID: 4, At: at(3), Outcome: "sent"}, // began at 3
		{ID: 3, At: at(2), Outcome: "sent"}, // began at 2
		{ID: 2, At: at(2), Outcome: "refused"},
		{ID: 1, At: at(0), Outcome: "act"},
	}
	var ids []int64
	for _, e := range newestFirst(page) {
		ids = append(ids, e.ID)
	}
	if want := []int64{4, 3, 2, 5, 1}; !slices.Equal(ids, want) {
		t.Errorf("newestFirst = %v, want %v", ids, want)
	}
	if page[0].ID != 5 {
		t.Error("newestFirst reordered its argument")
	}

	var out strings.Builder
	c := &ctl{e: env{stdout: &out}}
	c.printJournal(newestFirst(page))
	var times []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		times = append(times, strings.Fields(l)[0])
	}
	if !slices.IsSortedFunc(times, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("the listing's times go back and forth:\n%s", out.String())
	}
}
