package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHosts(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	web := Host{ID: "h1", Name: "Snug web", Surface: SurfaceWeb, Origin: "https://snug.example", TokenHash: bytes.Repeat([]byte{1}, 32)}
	desk := Host{ID: "h2", Name: "Snug desktop", Surface: SurfaceDesktop, TokenHash: bytes.Repeat([]byte{2}, 32)}
	update(t, s, func(tx *Tx) error {
		if _, err := tx.InsertHost(web); err != nil {
			return err
		}
		_, err := tx.InsertHost(desk)
		return err
	})
	for _, tc := range []struct {
		name string
		h    Host
	}{
		{"duplicate id", Host{ID: "h1", Surface: SurfaceWeb, TokenHash: []byte{9}}},
		{"duplicate token hash", Host{ID: "h3", Surface: SurfaceWeb, TokenHash: web.TokenHash}},
		{"unknown surface", Host{ID: "h4", Surface: "phone", TokenHash: []byte{8}}},
		{"no token hash", Host{ID: "h5", Surface: SurfaceWeb}},
	} {
		if err := s.Update(t.Context(), func(tx *Tx) error { _, err := tx.InsertHost(tc.h); return err }); err == nil {
			t.Errorf("InsertHost(%s) = nil, want an error", tc.name)
		}
	}
	c.Advance(time.Minute)
	update(t, s, func(tx *Tx) error { return tx.TouchHost("h1") })
	view(t, s, func(tx *Tx) error {
		h, err := tx.HostByTokenHash(bytes.Repeat([]byte{1}, 32))
		if err != nil || h.ID != "h1" || h.Origin != "https://snug.example" || h.Surface != SurfaceWeb {
			t.Errorf("HostByTokenHash = %+v, %v, want h1", h, err)
		}
		if h.LastSeenAt == nil || !h.LastSeenAt.Equal(c.Now().Truncate(time.Millisecond)) {
			t.Errorf("LastSeenAt = %v, want the touch time", h.LastSeenAt)
		}
		if _, err := tx.HostByTokenHash([]byte{1}); !errors.Is(err, ErrNotFound) {
			t.Errorf("HostByTokenHash(unknown) = %v, want ErrNotFound", err)
		}
		hs, err := tx.Hosts()
		if err != nil || len(hs) != 2 || hs[0].ID != "h1" || hs[1].LastSeenAt != nil {
			t.Errorf("Hosts() = %+v, %v", hs, err)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error {
		if err := tx.DeleteHost("h1"); err != nil {
			return err
		}
		if err := tx.DeleteHost("h1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second DeleteHost = %v, want ErrNotFound", err)
		}
		if err := tx.TouchHost("h1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("TouchHost(deleted) = %v, want ErrNotFound", err)
		}
		if _, err := tx.Host("h1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Host(deleted) = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestPairingLifecycle(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	p := Pairing{ID: "p1", Code: "ABCD-1234", Challenge: "chal", Name: "web", Surface: SurfaceWeb, Origin: "https://snug.example", ExpiresAt: c.Now().Add(5 * time.Minute)}
	update(t, s, func(tx *Tx) error {
		got, err := tx.InsertPairing(p)
		if err == nil && got.State != PairingPending {
			t.Errorf("new pairing state = %q, want pending", got.State)
		}
		return err
	})
	// A second pending request cannot take the same code.
	err := s.Update(t.Context(), func(tx *Tx) error {
		_, err := tx.InsertPairing(Pairing{ID: "p2", Code: "ABCD-1234", Challenge: "c", Surface: SurfaceWeb, ExpiresAt: c.Now()})
		return err
	})
	if err == nil {
		t.Error("InsertPairing with a pending code = nil, want an error")
	}
	update(t, s, func(tx *Tx) error {
		got, err := tx.PendingPairingByCode("ABCD-1234")
		if err != nil || got.ID != "p1" || got.Challenge != "chal" || !got.ExpiresAt.Equal(p.ExpiresAt.Truncate(time.Millisecond)) {
			t.Errorf("PendingPairingByCode = %+v, %v", got, err)
		}
		if err := tx.SetPairingState("p1", PairingPending, PairingApproved, ""); err != nil {
			return err
		}
		// Approving twice, or from the wrong state, is a conflict.
		if err := tx.SetPairingState("p1", PairingPending, PairingApproved, ""); !errors.Is(err, ErrConflict) {
			t.Errorf("second approve = %v, want ErrConflict", err)
		}
		if err := tx.SetPairingState("nope", PairingPending, PairingApproved, ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("SetPairingState(unknown) = %v, want ErrNotFound", err)
		}
		if _, err := tx.PendingPairingByCode("ABCD-1234"); !errors.Is(err, ErrNotFound) {
			t.Errorf("PendingPairingByCode(approved) = %v, want ErrNotFound", err)
		}
		if _, err := tx.InsertHost(Host{ID: "h1", Surface: SurfaceWeb, TokenHash: []byte{1}}); err != nil {
			return err
		}
		return tx.SetPairingState("p1", PairingApproved, PairingRedeemed, "h1")
	})
	// Redeem happens once.
	err = s.Update(t.Context(), func(tx *Tx) error { return tx.SetPairingState("p1", PairingApproved, PairingRedeemed, "h1") })
	if !errors.Is(err, ErrConflict) {
		t.Errorf("second redeem = %v, want ErrConflict", err)
	}
	// A state the table does not know is refused.
	err = s.Update(t.Context(), func(tx *Tx) error { return tx.SetPairingState("p1", PairingRedeemed, "bogus", "") })
	if err == nil {
		t.Error("SetPairingState(bogus) = nil, want an error")
	}
	// Unpairing the host clears host_id, keeps the history.
	update(t, s, func(tx *Tx) error { return tx.DeleteHost("h1") })
	view(t, s, func(tx *Tx) error {
		got, err := tx.Pairing("p1")
		if err != nil || got.State != PairingRedeemed || got.HostID != "" {
			t.Errorf("Pairing after unpair = %+v, %v, want redeemed with no host", got, err)
		}
		return nil
	})
}

func TestExpireAndDeletePairings(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	update(t, s, func(tx *Tx) error {
		for i, ttl := range []time.Duration{time.Minute, 2 * time.Minute, time.Hour} {
			p := Pairing{ID: fmt.Sprint("p", i), Code: fmt.Sprint("C", i), Challenge: "c", Surface: SurfaceDesktop, ExpiresAt: c.Now().Add(ttl)}
			if _, err := tx.InsertPairing(p); err != nil {
				return err
			}
		}
		return nil
	})
	c.Advance(2 * time.Minute) // p0 and p1 (expiring exactly now) are due
	update(t, s, func(tx *Tx) error {
		n, err := tx.ExpirePairings()
		if err != nil || n != 2 {
			t.Errorf("ExpirePairings() = %d, %v, want 2", n, err)
		}
		return nil
	})
	c.Advance(time.Minute)
	update(t, s, func(tx *Tx) error {
		n, err := tx.DeletePairingsBefore(tx.Now())
		if err != nil || n != 2 {
			t.Errorf("DeletePairingsBefore() = %d, %v, want 2 (pending kept)", n, err)
		}
		ps, _ := tx.Pairings()
		if len(ps) != 1 || ps[0].ID != "p2" || ps[0].State != PairingPending {
			t.Errorf("Pairings() = %+v, want only pending p2", ps)
		}
		if err := tx.DeletePairing("p2"); err != nil {
			return err
		}
		if err := tx.DeletePairing("p2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second DeletePairing = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestJournalPagingAndRetention(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now; o.JournalKeep = 10 })
	for i := range 25 {
		c.Advance(time.Second)
		update(t, s, func(tx *Tx) error {
			e, err := tx.InsertJournal(JournalEntry{
				AppID: fmt.Sprint("app", i%2), Slot: "s", Host: "api.example.com", Method: "POST",
				Outcome: "sent", Status: 200, Duration: 1500 * time.Microsecond, Unattended: i%5 == 0, Note: fmt.Sprint("n", i),
			})
			if err == nil && e.ID != int64(i+1) {
				t.Errorf("entry %d got id %d", i, e.ID)
			}
			return err
		})
	}
	view(t, s, func(tx *Tx) error {
		var n int
		tx.queryRow("SELECT count(*) FROM snugd_journal").Scan(&n)
		if n != 10 {
			t.Errorf("journal holds %d entries, want the newest 10", n)
		}
		page, err := tx.Journal(JournalQuery{Limit: 4})
		if err != nil || len(page) != 4 || page[0].ID != 25 || page[3].ID != 22 {
			t.Errorf("first page = %v, want ids 25..22", ids(page))
		}
		if e := page[0]; e.Note != "n24" || e.Duration != time.Millisecond || e.Status != 200 || !e.At.Equal(c.Now().Truncate(time.Millisecond)) {
			t.Errorf("newest entry = %+v", e)
		}
		next, _ := tx.Journal(JournalQuery{Limit: 4, Before: page[3].ID})
		if got := ids(next); fmt.Sprint(got) != "[21 20 19 18]" {
			t.Errorf("second page = %v, want [21 20 19 18]", got)
		}
		app1, _ := tx.Journal(JournalQuery{AppID: "app1"})
		if got := ids(app1); fmt.Sprint(got) != "[24 22 20 18 16]" {
			t.Errorf("app1 entries = %v", got)
		}
		un, _ := tx.Journal(JournalQuery{UnattendedOnly: true})
		if got := ids(un); fmt.Sprint(got) != "[21 16]" {
			t.Errorf("unattended entries = %v, want [21 16]", got)
		}
		if _, err := tx.JournalEntry(3); !errors.Is(err, ErrNotFound) {
			t.Errorf("JournalEntry(pruned) = %v, want ErrNotFound", err)
		}
		if e, err := tx.JournalEntry(20); err != nil || e.AppID != "app1" {
			t.Errorf("JournalEntry(20) = %+v, %v", e, err)
		}
		return nil
	})
	err := s.Update(t.Context(), func(tx *Tx) error { _, err := tx.InsertJournal(JournalEntry{AppID: "a"}); return err })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("InsertJournal(no outcome) = %v, want ErrInvalid", err)
	}
}

func ids(es []JournalEntry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestJournalQueriesUseIndexes(t *testing.T) {
	s := openStore(t)
	for _, tc := range []struct {
		q    JournalQuery
		want string
	}{
		{JournalQuery{}, "SCAN snugd_journal"}, // newest first along the rowid, stopping at the limit
		{JournalQuery{Before: 10}, "USING INTEGER PRIMARY KEY"},
		// One app's page: its two classes merged, each walked newest first.
		{JournalQuery{AppID: "a"}, "MERGE (UNION ALL); LEFT; SEARCH snugd_journal USING INDEX snugd_journal_retain (app_id=? AND user_act=?); RIGHT; SEARCH snugd_journal USING INDEX snugd_journal_retain (app_id=? AND user_act=?)"},
		{JournalQuery{AppID: "a", Before: 10}, "MERGE (UNION ALL); LEFT; SEARCH snugd_journal USING INDEX snugd_journal_retain (app_id=? AND user_act=? AND id<?); RIGHT; SEARCH snugd_journal USING INDEX snugd_journal_retain (app_id=? AND user_act=? AND id<?)"},
		{JournalQuery{AppID: "a", Kind: "acts"}, "SEARCH snugd_journal USING INDEX snugd_journal_retain (app_id=? AND user_act=?)"},
		{JournalQuery{AppID: "a", Kind: "requests", Before: 10}, "SEARCH snugd_journal USING INDEX snugd_journal_retain (app_id=? AND user_act=? AND id<?)"},
		{JournalQuery{UnattendedOnly: true, Before: 10}, "snugd_journal_unattended"},
	} {
		view(t, s, func(tx *Tx) error {
			query, args := journalQuery(tc.q)
			rows, err := tx.query("EXPLAIN QUERY PLAN "+query, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				rows.Scan(&id, &parent, &notused, &detail)
				plan = append(plan, detail)
			}
			got := strings.Join(plan, "; ")
			if !strings.Contains(got, tc.want) || strings.Contains(got, "TEMP B-TREE") {
				t.Errorf("plan for %+v = %q, want %q and no sort", tc.q, got, tc.want)
			}
			return nil
		})
	}
}

func TestRowBoundsAndRequiredFields(t *testing.T) {
	s := openStore(t)
	long := strings.Repeat("x", maxJournalText+1)
	tests := []struct {
		name  string
		write func(tx *Tx) error
	}{
		{"journal note too long", func(tx *Tx) error {
			_, err := tx.InsertJournal(JournalEntry{AppID: "a", Outcome: "sent", Note: long})
			return err
		}},
		{"journal host too long", func(tx *Tx) error {
			_, err := tx.InsertJournal(JournalEntry{AppID: "a", Outcome: "sent", Host: long})
			return err
		}},
		{"journal without app", func(tx *Tx) error { _, err := tx.InsertJournal(JournalEntry{Outcome: "sent"}); return err }},
		{"host without id", func(tx *Tx) error {
			_, err := tx.InsertHost(Host{Surface: SurfaceWeb, TokenHash: []byte{1}})
			return err
		}},
		{"pairing without code", func(tx *Tx) error {
			_, err := tx.InsertPairing(Pairing{ID: "p", Challenge: "c", Surface: SurfaceWeb, ExpiresAt: time.Now()})
			return err
		}},
		{"pairing without challenge", func(tx *Tx) error {
			_, err := tx.InsertPairing(Pairing{ID: "p", Code: "c", Surface: SurfaceWeb, ExpiresAt: time.Now()})
			return err
		}},
		{"pairing without expiry", func(tx *Tx) error {
			_, err := tx.InsertPairing(Pairing{ID: "p", Code: "c", Challenge: "c", Surface: SurfaceWeb})
			return err
		}},
	}
	for _, tc := range tests {
		if err := s.Update(t.Context(), tc.write); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
	// Exactly at the bound is fine.
	update(t, s, func(tx *Tx) error {
		_, err := tx.InsertJournal(JournalEntry{AppID: "a", Outcome: "sent", Note: long[1:]})
		return err
	})
}
