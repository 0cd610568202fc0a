package store

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func pairingAt(i int, surface Surface, state PairingState, created time.Time) Pairing {
	return Pairing{
		ID: fmt.Sprintf("p_%032d", i), Code: fmt.Sprintf("C%07d", i), Challenge: "challenge", Name: fmt.Sprintf("name %d", i),
		Surface: surface, State: state, CreatedAt: created, ExpiresAt: created.Add(10 * time.Minute),
	}
}

// TestPairingQueriesBounded: the pending, live and finished requests are
// each read through their index, with the rows asked for and no others,
// and PrunePairings keeps the newest finished requests and every pending
// and approved one.
func TestPairingQueriesBounded(t *testing.T) {
	s := openStore(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	update(t, s, func(tx *Tx) error {
		for i := range 40 {
			state := []PairingState{PairingPending, PairingApproved, PairingDenied, PairingExpired, PairingRedeemed}[i%5]
			surface := []Surface{SurfaceDesktop, SurfaceWeb}[i%2]
			created := t0.Add(time.Duration(i) * time.Minute)
			if i == 0 {
				created = t0.Add(-time.Hour) // pending, but past its expiry
			}
			if _, err := tx.InsertPairing(pairingAt(i, surface, state, created)); err != nil {
				return err
			}
		}
		return nil
	})
	now := t0.Add(35 * time.Minute)
	view(t, s, func(tx *Tx) error {
		desk, err := tx.PendingPairings(SurfaceDesktop)
		if err != nil {
			return err
		}
		// Pending is i%5 == 0, desktop i%2 == 0: 0, 10, 20, 30, oldest first.
		if got := pairingIDs(desk); got != "0,10,20,30" {
			t.Errorf("PendingPairings(desktop) = %s", got)
		}
		web, err := tx.PendingPairings(SurfaceWeb)
		if err != nil {
			return err
		}
		if got := pairingIDs(web); got != "5,15,25,35" {
			t.Errorf("PendingPairings(web) = %s", got)
		}
		live, err := tx.LivePairings(now)
		if err != nil {
			return err
		}
		// Expiry is created + 10 min > now (t0+35): created after t0+25.
		if got := pairingIDs(live); got != "35,30" {
			t.Errorf("LivePairings = %s, want 35,30", got)
		}
		n, err := tx.CountLivePairings(now)
		if err != nil || n != 2 {
			t.Errorf("CountLivePairings = %d, %v; want 2", n, err)
		}
		return nil
	})
	var pruned int64
	update(t, s, func(tx *Tx) error {
		var err error
		pruned, err = tx.PrunePairings(5)
		return err
	})
	if pruned != 24-5 {
		t.Errorf("PrunePairings(5) deleted %d, want %d", pruned, 24-5)
	}
	all, err := Read(t.Context(), s, (*Tx).Pairings)
	if err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, p := range all {
		switch p.State {
		case PairingDenied, PairingExpired, PairingRedeemed:
			finished++
			if i, _ := strconv.Atoi(pairingIDs([]Pairing{p})); i < 33 { // the newest five finished: 33, 34, 37, 38, 39
				t.Errorf("PrunePairings(5) kept finished request %d, not one of the newest", i)
			}
		}
	}
	if finished != 5 || len(all) != 16+5 {
		t.Errorf("after PrunePairings(5): %d rows, %d finished; want 21 and 5", len(all), finished)
	}

	// Every query of the request paths and the status read goes through
	// an index: none scans the table.
	for _, q := range []struct {
		query string
		args  []any
	}{
		{queryPendingPairings, []any{"web"}},
		{queryLivePairings, []any{""}},
		{queryCountLivePairings, []any{""}},
		{queryExpirePairings, []any{""}},
		{queryDeletePairingsBefore, []any{""}},
		{queryPrunePairings, []any{5}},
		{queryPendingPairingByCode, []any{"X"}},
		{"SELECT " + pairingColumns + " FROM snugd_pairings WHERE id = ?", []any{"X"}},
	} {
		view(t, s, func(tx *Tx) error {
			plan := strings.Join(queryPlan(t, tx, q.query, q.args...), "\n")
			if strings.Contains(plan, "SCAN snugd_pairings") && !strings.Contains(plan, "USING") {
				t.Errorf("%s\nscans the table: %s", q.query, plan)
			}
			return nil
		})
	}
}

func pairingIDs(ps []Pairing) string {
	var out []string
	for _, p := range ps {
		var i int
		fmt.Sscanf(p.ID, "p_%d", &i)
		out = append(out, fmt.Sprint(i))
	}
	return strings.Join(out, ",")
}
