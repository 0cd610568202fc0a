//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// killsEnv sets how many times TestKillNineJournal kills snugd; the default
// keeps the test under a minute.
const killsEnv = "SNUGD_E2E_KILLS"

// TestKillNineJournal runs the real binary under load (concurrent GETs and
// confirmed POSTs through /v1/net), kills it with SIGKILL at a random
// moment, restarts it and checks, for every cycle: every request a client
// got an answer for has its journal row (answered ⇒ journaled), every POST
// the upstream received has a row (completed, or sent-unknown when the
// kill came between the send and the answer), and the database is sound.
// The journal holds no URL and no body, so rows are matched by count per
// method within the cycle: a row may exist for a request whose answer the
// kill cut off, never the other way round.
func TestKillNineJournal(t *testing.T) {
	kills := 20
	if v := os.Getenv(killsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5000 {
			t.Fatalf("%s=%q: want a count 1-5000", killsEnv, v)
		}
		kills = n
	}
	h := setUpHarness(t)
	bin := buildSnugd(t, h.dir)
	s := startSnugd(t, h, bin)
	token := s.pairHost(t, "E2E Kill")
	st, raw, err := s.call(t, http.MethodPut, "/v1/apps/"+app+"/connections/exchange", token, map[string]json.RawMessage{"requirement": json.RawMessage(exchangeRequirement)}, nil)
	if err != nil || st/100 != 2 {
		t.Fatalf("PUT connection = %d %s, %v", st, raw, err)
	}
	if code, out, errOut := s.ctl(t, "", "approve", app, "exchange", "--yes"); code != 0 {
		t.Fatalf("snugd ctl approve = %d\n%s%s", code, out, errOut)
	}
	values := fmt.Sprintf(`{"api_key":%q,"api_secret":%q,"passphrase":%q}`, e2eKey, e2eSecret, e2ePassphrase)
	if code, out, errOut := s.ctl(t, values, "credentials", "set", app, "exchange"); code != 0 {
		t.Fatalf("snugd ctl credentials set = %d\n%s%s", code, out, errOut)
	}

	var total killTotals
	lastID := s.maxJournalID(t, token)
	started := time.Now()
	for cycle := range kills {
		mark := h.pub.mark()
		c := s.loadAndKill(t, token, cycle, time.Duration(50+rand.IntN(400))*time.Millisecond)
		total.maxRestart = max(total.maxRestart, restartSnugd(t, h, s))
		rows := s.journalSince(t, token, lastID)
		lastID = max(lastID, rows.maxID)
		time.Sleep(100 * time.Millisecond) // the upstream's reports travel through a pipe
		upPosts := 0
		for _, ev := range h.pub.requestsSince(mark) {
			if ev.Method == http.MethodPost && strings.Contains(ev.Body, "kill-") {
				upPosts++
			}
		}
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if rows.byMethod[m] < c.answered[m] {
				t.Errorf("cycle %d: %d %s requests answered, %d journal rows: an answered request has no row", cycle, c.answered[m], m, rows.byMethod[m])
			}
			if rows.byMethod[m] > c.sent[m] {
				t.Errorf("cycle %d: %d %s journal rows for %d requests sent", cycle, rows.byMethod[m], m, c.sent[m])
			}
		}
		if rows.byMethod[http.MethodPost] < upPosts {
			t.Errorf("cycle %d: the upstream received %d POSTs, the journal has %d POST rows: a mutating send has no row", cycle, upPosts, rows.byMethod[http.MethodPost])
		}
		var status struct {
			Database string `json:"database"`
		}
		if st, raw, err := s.call(t, http.MethodGet, "/v1/status", token, nil, &status); err != nil || st != http.StatusOK || status.Database != "ok" {
			t.Errorf("cycle %d: GET /v1/status = %d %s, %v; want database ok", cycle, st, raw, err)
		}
		total.add(c, rows, upPosts)
		if t.Failed() {
			break
		}
	}
	s.stop(t)
	if code, out, errOut := s.ctl(t, "", "doctor"); !strings.Contains(out, "quick_check ok") {
		t.Errorf("snugd ctl doctor after the kills = %d\n%s%s", code, out, errOut)
	}
	t.Logf("%d kills in %v: answered %d GET / %d POST, journal rows %d GET / %d POST (%d sent-unknown), upstream POSTs %d, max restart %v",
		total.kills, time.Since(started).Round(time.Second), total.answered[http.MethodGet], total.answered[http.MethodPost],
		total.rows[http.MethodGet], total.rows[http.MethodPost], total.unknown, total.upPosts, total.maxRestart)
}

// killCycle is what one cycle's clients sent and got an answer for, by
// method.
type killCycle struct {
	sent, answered map[string]int
}

// killTotals sums the cycles for the log.
type killTotals struct {
	kills            int
	answered, rows   map[string]int
	unknown, upPosts int
	maxRestart       time.Duration
}

func (k *killTotals) add(c killCycle, r journalCounts, upPosts int) {
	if k.answered == nil {
		k.answered, k.rows = map[string]int{}, map[string]int{}
	}
	k.kills++
	for m, n := range c.answered {
		k.answered[m] += n
	}
	for m, n := range r.byMethod {
		k.rows[m] += n
	}
	k.unknown += r.unknown
	k.upPosts += upPosts
}

// loadAndKill runs four GET clients, two POST clients and a confirm
// decider (allow, remembered for the session, so that after the first
// confirm of a process the POSTs run unparked) against s for d, then
// kills snugd with SIGKILL while they run, and returns what they sent
// and what was answered. Every loop is bounded by d and the kill.
func (s *snugd) loadAndKill(t *testing.T, token string, cycle int, d time.Duration) killCycle {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		mu sync.Mutex
		c  = killCycle{sent: map[string]int{}, answered: map[string]int{}}
		wg sync.WaitGroup
		n  atomic.Int64
	)
	client := func(method string) {
		defer wg.Done()
		for ctx.Err() == nil {
			id := fmt.Sprintf("kill-%d-%d", cycle, n.Add(1))
			body, u := "", "https://api.e2e.test/accounts?n="+id
			if method == http.MethodPost {
				body, u = fmt.Sprintf(`{"nonce":%q}`, id), "https://api.e2e.test/orders"
			}
			mu.Lock()
			c.sent[method]++
			mu.Unlock()
			if _, err := s.net(ctx, token, id, method, u, body); err != nil {
				return // snugd is gone
			}
			mu.Lock()
			c.answered[method]++
			mu.Unlock()
		}
	}
	for range 4 {
		wg.Add(1)
		go client(http.MethodGet)
	}
	for range 2 {
		wg.Add(1)
		go client(http.MethodPost)
	}
	wg.Add(1)
	go func() { // the confirm decider
		defer wg.Done()
		for ctx.Err() == nil {
			var list struct {
				Confirms []struct {
					ID string `json:"id"`
				} `json:"confirms"`
			}
			if st, _, err := s.callCtx(ctx, http.MethodGet, "/v1/confirms", token, nil, &list); err != nil || st != http.StatusOK {
				return
			}
			for _, cf := range list.Confirms {
				s.callCtx(ctx, http.MethodPost, "/v1/confirms/"+url.PathEscape(cf.ID), token, map[string]string{"decision": "allow", "remember": "session"}, nil)
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	select {
	case <-time.After(d):
	case <-s.done:
		t.Fatalf("cycle %d: snugd exited under load: %v", cycle, s.err)
	}
	s.cmd.Process.Kill() // SIGKILL: ip netns exec, unshare and sh exec'd snugd, so this is snugd
	<-s.done
	cancel()
	wg.Wait()
	return c
}

// restartSnugd starts s again on the same data directory, exactly as
// startSnugd did, waits until GET /v1/health answers and returns how long
// that took.
func restartSnugd(t *testing.T, h *harness, s *snugd) time.Duration {
	t.Helper()
	start := time.Now()
	s.done = make(chan struct{})
	s.cmd = exec.Command("ip", "netns", "exec", cliNSName, "unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" /etc/hosts && exec "$2" run --data-dir "$3"`, "sh", filepath.Join(h.dir, "hosts"), s.bin, s.dataDir)
	s.cmd.Env = append(cleanEnv(), "SSL_CERT_FILE="+h.pki.caFile, "SSL_CERT_DIR="+filepath.Join(h.dir, "no-cert-dir"))
	s.cmd.SysProcAttr = dieWithParent()
	s.cmd.Stdout = io.MultiWriter(s.log, io.Discard)
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("restart snugd: %v", err)
	}
	done := s.done
	cmd := s.cmd
	go func() { s.err = cmd.Wait(); close(done) }()
	for range 1000 { // 10 seconds at most
		if st, _, err := s.call(t, http.MethodGet, "/v1/health", "", nil, nil); err == nil && st == http.StatusOK {
			return time.Since(start)
		}
		select {
		case <-done:
			t.Fatalf("snugd exited at restart: %v\n%s", s.err, s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("snugd did not answer GET /v1/health within 10 seconds of a restart")
	return 0
}

// journalCounts are the request rows of the journal past an id: how many
// requests each method's rows stand for (a folded refusal counts its
// repeats), how many read sent-unknown, and the newest id.
type journalCounts struct {
	byMethod map[string]int
	unknown  int
	maxID    int64
}

type journalPage struct {
	Entries []struct {
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Outcome string `json:"outcome"`
		Count   int    `json:"count"`
	} `json:"entries"`
	Next int64 `json:"next"`
}

// journalSince reads every request entry newer than after.
func (s *snugd) journalSince(t *testing.T, token string, after int64) journalCounts {
	t.Helper()
	c := journalCounts{byMethod: map[string]int{}, maxID: after}
	before := int64(0)
	for range 1000 { // pages of 1000: far more than a cycle writes
		q := "/v1/journal?kind=requests&limit=1000"
		if before > 0 {
			q += "&before=" + strconv.FormatInt(before, 10)
		}
		var page journalPage
		if st, raw, err := s.call(t, http.MethodGet, q, token, nil, &page); err != nil || st != http.StatusOK {
			t.Fatalf("GET %s = %d %s, %v", q, st, raw, err)
		}
		for _, e := range page.Entries {
			if e.ID <= after {
				return c
			}
			c.maxID = max(c.maxID, e.ID)
			c.byMethod[e.Method] += max(e.Count, 1)
			if e.Outcome == "sent-unknown" {
				c.unknown++
			}
		}
		if page.Next == 0 {
			return c
		}
		before = page.Next
	}
	t.Fatal("the journal did not end")
	return c
}

// maxJournalID is the newest entry's id.
func (s *snugd) maxJournalID(t *testing.T, token string) int64 {
	t.Helper()
	var page journalPage
	if st, raw, err := s.call(t, http.MethodGet, "/v1/journal?limit=1", token, nil, &page); err != nil || st != http.StatusOK {
		t.Fatalf("GET /v1/journal = %d %s, %v", st, raw, err)
	}
	if len(page.Entries) == 0 {
		return 0
	}
	return page.Entries[0].ID
}
