package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/linkdevice"
)

// The offline demo, snugd ctl demo: an app connects to the simulator
// helper that ships inside snugd (a pretend messaging account, no account
// and no network anywhere), through every step a real connection takes:
// proposed, reviewed and approved, linked by scanning a QR code, then one
// read and one send, the send held for the person's yes. Everything goes
// over the ctl socket, so the daemon's own gates, confirm and journal do
// the work; the command only narrates.
const (
	demoApp    = "snug-demo"
	demoSlot   = "chat"
	demoBase   = "https://sim.sidecar.invalid"
	demoThread = "t-alice"
	demoText   = "Hello from the snugd demo"
)

// demoRequirement is the demo's connection requirement, the simulator's:
// api/examples/simulator.json says the same (TestDemoRequirementIsTheExample).
// A linked_device requirement declares the field the pairing fills (here
// the helper token, which snugd stores and nobody types).
const demoRequirement = `{
  "slot": "chat",
  "provider": {"name": "Snug Simulator"},
  "kind": "linked_device",
  "fields": [{"key": "helper_token", "label": "Helper token", "type": "secret", "description": "Minted by the simulator when the link completes; snugd stores it and you never type it."}],
  "declaredApiHosts": ["sim.sidecar.invalid"],
  "testRequest": {"method": "GET", "pathAndQuery": "/v1/threads"}
}`

const demoLinkStep = "Step 3 of 4: link the simulator by scanning its QR code"

const demoSynopsis = "demo [--yes] | demo scan PAYLOAD | demo --remove"

// demoSendWait bounds the wait for the send's confirm to be answered; the
// confirm's own expiry is usually shorter.
const demoSendWait = 10 * time.Minute

// ctlDemo is snugd ctl demo [--yes] | scan PAYLOAD | --remove. Run again,
// it does only the steps still owed: an approved, linked demo goes
// straight to the two requests.
func ctlDemo(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags(demoSynopsis)
	yes := fs.Bool("yes", false, "approve the demo's connection as reviewed without asking (needed without a terminal); the send's confirm is still asked")
	remove := fs.Bool("remove", false, "revoke the demo's connection: its token is wiped and the simulator unlinked")
	pos, code, ok := parseCtlArgs(fs, args, 2)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		if pos[0] != "scan" || len(pos) != 2 || *yes || *remove {
			fmt.Fprintf(c.e.stderr, "usage: snugd ctl %s\n", demoSynopsis)
			return exitUsage
		}
		return c.demoScan(ctx, pos[1])
	}
	if c.json {
		fmt.Fprintf(c.e.stderr, "%s: --json is not supported: the demo shows a person each step; snugd ctl connections %s --json shows the result\n", c.name, demoApp)
		return exitUsage
	}
	if *remove {
		if *yes {
			fmt.Fprintf(c.e.stderr, "usage: snugd ctl %s\n", demoSynopsis)
			return exitUsage
		}
		return c.demoRemove(ctx)
	}
	c.out("The snugd demo: the app %q connects to the simulator, a pretend messaging", demoApp)
	c.out("account that lives inside snugd (no account, no network), as a real app connects.")
	c.out("")
	cn, found, err := c.demoConnection(ctx)
	if err != nil {
		return c.fail(err)
	}

	if found && !isDemoRow(cn) {
		// Someone's own app happens to use the name: not the demo's to
		// approve, link or send through.
		fmt.Fprintf(c.e.stderr, "%s: %s/%s exists and is not the demo's simulator connection; the demo leaves it alone\n", c.name, demoApp, demoSlot)
		return exitNo
	}
	c.out("Step 1 of 4: the app proposes a connection")
	switch {
	case !found:
		if _, err := c.client.PutConnection(ctx, demoApp, demoSlot, json.RawMessage(demoRequirement)); err != nil {
			return c.fail(err)
		}
		c.out("  proposed %s/%s (a host does this with PUT /v1/apps/%s/connections/%s)", demoApp, demoSlot, demoApp, demoSlot)
	case cn.Status == "revoked":
		if _, err := c.client.Reconnect(ctx, demoApp, demoSlot); err != nil {
			return c.fail(err)
		}
		c.out("  %s/%s was removed before: proposed again (snugd ctl reconnect)", demoApp, demoSlot)
	default:
		c.out("  %s/%s exists already (%s)", demoApp, demoSlot, cn.Status)
	}

	c.out("")
	c.out("Step 2 of 4: you review and approve it")
	if code := c.demoApprove(ctx, *yes); code != exitOK {
		return code
	}

	c.out("")
	c.out(demoLinkStep)
	if cn, _, err = c.demoConnection(ctx); err != nil {
		return c.fail(err)
	}
	if st := cn.State; st != nil && st.Status == "connected" && st.LinkVerifiedAt != nil {
		c.out("  linked already (since %s): nothing to scan", stamp(st.LinkVerifiedAt))
	} else if code := c.demoLink(ctx); code != exitOK {
		return code
	}

	c.out("")
	c.out("Step 4 of 4: the app makes two requests through snugd")
	if code := c.demoRead(ctx); code != exitOK {
		return code
	}
	if code := c.demoSend(ctx); code != exitOK {
		return code
	}
	c.out("")
	c.out("Done. What snugd recorded: %s", c.cmdLine("journal --app "+demoApp))
	c.out("Run %s again to repeat the requests; %s removes the demo.", c.cmdLine("demo"), c.cmdLine("demo --remove"))
	return exitOK
}

// demoConnection reads the demo's row; found is false when there is none.
func (c *ctl) demoConnection(ctx context.Context) (cn api.ConnectionJSON, found bool, err error) {
	list, err := c.client.Connections(ctx, demoApp)
	if errors.Is(err, errcode.AppNotFound) {
		return cn, false, nil
	}
	if err != nil {
		return cn, false, err
	}
	for _, x := range list {
		if x.Slot == demoSlot {
			return x, true, nil
		}
	}
	return cn, false, nil
}

// isDemoRow reports whether cn is the demo's own row: a linked device
// that reaches the simulator and nothing else.
func isDemoRow(cn api.ConnectionJSON) bool {
	var r struct {
		Kind  string   `json:"kind"`
		Hosts []string `json:"declaredApiHosts"`
	}
	if json.Unmarshal(cn.Requirement, &r) != nil {
		return false
	}
	return r.Kind == "linked_device" && len(r.Hosts) == 1 && r.Hosts[0] == "sim.sidecar.invalid"
}

// demoApprove shows the review and approves what it showed, as snugd ctl
// approve does; an approved row is left as it is.
func (c *ctl) demoApprove(ctx context.Context, yes bool) int {
	rv, err := c.client.Review(ctx, demoApp, demoSlot)
	if err != nil {
		return c.fail(err)
	}
	cn := rv.Connection
	switch {
	case cn.NeedsReapproval:
		c.out("  %s/%s has a change waiting for approval that the demo did not make:", demoApp, demoSlot)
		c.out("  look at it with %s, or start over: %s, then %s", c.cmdLine("review "+demoApp+" "+demoSlot), c.cmdLine("demo --remove"), c.cmdLine("demo"))
		return exitNo
	case cn.Status == "approved":
		c.out("  approved already (%s); it may reach: %s", stamp(cn.ApprovedAt), hostList(cn.AllowedHosts))
		return exitOK
	}
	printReview(c, rv)
	if ok, code := c.confirm(yes, shown(fmt.Sprintf("approve %s/%s as shown?", demoApp, demoSlot))); !ok {
		if code == exitUsage {
			fmt.Fprintf(c.e.stderr, "hint: %s approves it after showing the review\n", c.cmdLine("demo --yes"))
		}
		return code
	}
	cn, err = c.client.ApproveReview(ctx, demoApp, demoSlot, rv.ReviewToken)
	if err != nil {
		return c.fail(err)
	}
	c.out("  %s/%s approved; it may reach: %s", demoApp, demoSlot, hostList(cn.AllowedHosts))
	return exitOK
}

// demoLink starts the device link and shows each code with the command
// that scans it, until the flow ends. Ctrl-C cancels the flow.
func (c *ctl) demoLink(ctx context.Context) int {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	f, err := c.client.StartLink(sctx, demoApp, demoSlot, false)
	cancel()
	if err != nil {
		return c.fail(err)
	}
	tty := isTerminal(c.e.stdout)
	shown := ""
	tick := time.NewTicker(linkPollEvery)
	defer tick.Stop()
	for {
		if f.State != "qr" {
			code := c.linkEnded(f, demoApp, demoSlot)
			if code != exitOK {
				fmt.Fprintf(c.e.stderr, "hint: %s starts a new link with fresh codes\n", c.cmdLine("demo"))
			}
			return code
		}
		if f.QR != "" && f.QR != shown {
			if err := c.demoShowCode(f, tty); err != nil {
				c.cancelLink(f.FlowID)
				return c.fail(err)
			}
			shown = f.QR
		}
		select {
		case <-ctx.Done():
			c.cancelLink(f.FlowID)
			c.out("cancelled: the simulator was not linked")
			return exitNo
		case <-tick.C:
		}
		next, err := c.client.Flow(ctx, f.FlowID)
		if ctx.Err() != nil {
			continue // Ctrl-C: cancel above
		}
		if err != nil {
			return c.fail(err)
		}
		f = next
	}
}

// demoShowCode draws one code, its text and the command that scans it.
// On a terminal each code replaces the last; it is drawn once, not once a
// second, so that the command stays put long enough to copy.
func (c *ctl) demoShowCode(f api.FlowJSON, tty bool) error {
	var b strings.Builder
	if tty {
		b.WriteString("\x1b[H\x1b[2J" + demoLinkStep + "\n\n")
	}
	if err := linkdevice.RenderQR(&b, f.QR, terminalColumns(c.e.stdout)); err != nil {
		var tn *linkdevice.TooNarrowError
		if !errors.As(err, &tn) {
			return errors.New("the simulator's code cannot be drawn")
		}
		fmt.Fprintf(&b, "(widen the terminal to %d columns to see the code drawn)\n", tn.Need)
	}
	until := ""
	if f.QRExpiresAt != nil {
		until = fmt.Sprintf(" (this one until %s)", f.QRExpiresAt.Local().Format("15:04:05"))
	}
	io.WriteString(c.e.stdout, b.String())
	c.out("")
	c.out("  A phone would scan this code. Here the phone is the simulator: in another")
	c.out("  terminal, run")
	c.out("")
	c.out("      %s", c.cmdLine("demo scan "+f.QR))
	c.out("")
	c.out("  The code's text is %s.", f.QR)
	c.out("  It changes every 20 s%s; the command above always shows", until)
	c.out("  the current one. Ctrl-C cancels.")
	return nil
}

// demoRead reads the simulator's threads through snugd.
func (c *ctl) demoRead(ctx context.Context) int {
	u := demoBase + "/v1/threads"
	c.out("  GET %s", u)
	r, err := c.demoNet(ctx, "demo-read", "GET", u, "")
	if err != nil {
		return c.fail(err)
	}
	if code := c.demoRefused(r); code != exitOK {
		return code
	}
	var body struct {
		Threads []struct {
			ID       string `json:"id"`
			Title    string `json:"title"`
			Messages int    `json:"messages"`
		} `json:"threads"`
	}
	json.Unmarshal([]byte(r.Body), &body)
	c.out("  → %d: %s, read with the token snugd holds (the app never sees it)", r.Status, fmt.Sprintf("%d %s", len(body.Threads), plural(len(body.Threads), "thread", "threads")))
	for _, t := range body.Threads {
		c.out("      %-10s %s, %s", t.ID, t.Title, fmt.Sprintf("%d %s", t.Messages, plural(t.Messages, "message", "messages")))
	}
	return exitOK
}

// demoSend sends one message; snugd parks it for the person's yes, which
// is asked here on a terminal and can always be given with snugd ctl
// confirms allow ID.
func (c *ctl) demoSend(ctx context.Context) int {
	u := demoBase + "/v1/threads/" + demoThread + "/messages"
	body, _ := json.Marshal(map[string]string{"threadId": demoThread, "text": demoText})
	c.out("")
	c.out("  POST %s", u)
	c.out("  a send: snugd holds it until you say yes")
	ctx, cancel := context.WithTimeout(ctx, demoSendWait)
	defer cancel()
	type answer struct {
		r   demoFrame
		err error
	}
	done := make(chan answer, 1)
	go func() { // ends with the call, which ctx bounds
		r, err := c.demoNet(ctx, "demo-send", "POST", u, string(body))
		done <- answer{r, err}
	}()
	var (
		confirmID string // the confirm the send parked, once seen
		replies   <-chan string
		tick      = time.NewTicker(200 * time.Millisecond)
	)
	defer tick.Stop()
	for {
		select {
		case a := <-done:
			if a.err != nil {
				return c.fail(a.err)
			}
			if code := c.demoRefused(a.r); code != exitOK {
				return code
			}
			c.out("  → %d: sent %q to %s", a.r.Status, demoText, demoThread)
			return exitOK
		case line := <-replies:
			replies = nil
			decision := "deny"
			if l := strings.ToLower(strings.TrimSpace(line)); l == "y" || l == "yes" {
				decision = "allow"
			}
			// A confirm answered elsewhere first is gone: the call's own
			// answer, which follows, says how it ended.
			if err := c.client.DecideConfirm(ctx, confirmID, api.DecisionRequest{Decision: decision, Remember: "once"}); err != nil {
				fmt.Fprintf(c.e.stderr, "%s: the answer was not taken (%s); waiting for the send's outcome\n", c.name, shown(err.Error()))
			}
		case <-tick.C:
			if confirmID != "" {
				continue
			}
			list, err := c.client.Confirms(ctx)
			if err != nil {
				continue // the call's own answer says what went wrong
			}
			for _, cf := range list {
				if cf.AppID != demoApp || cf.Method != "POST" || cf.URL != u {
					continue
				}
				confirmID = cf.ID
				c.out("")
				c.demoPrintConfirm(cf)
				c.out("")
				c.out("  To let it go, run in another terminal:")
				c.out("")
				c.out("      %s", c.cmdLine("confirms allow "+cf.ID))
				c.out("")
				c.out("  or, to refuse it: %s", c.cmdLine("confirms deny "+cf.ID))
				if interactive(c.e.stdin) {
					fmt.Fprint(c.e.stdout, "  or answer here: allow this send? [y/N] ")
					replies = readLine(c.e.stdin)
				} else {
					c.out("  Waiting for your answer.")
				}
				break
			}
		}
	}
}

// demoPrintConfirm shows the confirm as snugd ctl confirms does, but for
// its decide line: the demo prints the commands itself, with the
// --data-dir this daemon needs.
func (c *ctl) demoPrintConfirm(cf api.ConfirmJSON) {
	var b strings.Builder
	cc := *c
	cc.e.stdout = &b
	cc.printConfirm(cf)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if !strings.HasPrefix(line, "  decide ") {
			io.WriteString(c.e.stdout, line)
		}
	}
}

// readLine reads one line of r in the background: the person's answer
// at the terminal. The goroutine ends with the line, or with the process
// when the send was answered elsewhere first.
func readLine(r io.Reader) <-chan string {
	ch := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(io.LimitReader(r, 256)).ReadString('\n')
		ch <- line
	}()
	return ch
}

// demoFrame is the part of a snug:net-response frame the demo reads.
type demoFrame struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// demoNet makes one request as the demo app, through POST /v1/net.
func (c *ctl) demoNet(ctx context.Context, id, method, u, body string) (demoFrame, error) {
	frame := map[string]any{"type": "snug:net-request", "v": 1, "requestId": id, "instanceId": "snugd-ctl-demo", "url": u, "method": method}
	if body != "" {
		frame["body"] = body
		frame["headers"] = map[string]string{"Content-Type": "application/json"}
	}
	raw, _ := json.Marshal(frame)
	out, err := c.client.Net(ctx, api.NetRequest{AppID: demoApp, Frame: raw, Delivery: "app"})
	if err != nil {
		return demoFrame{}, err
	}
	var f demoFrame
	if err := json.Unmarshal(out, &f); err != nil {
		return demoFrame{}, fmt.Errorf("the daemon's answer does not decode: %w", err)
	}
	return f, nil
}

// demoRefused prints a refused or failed request, with what to do next.
func (c *ctl) demoRefused(r demoFrame) int {
	if r.Error == nil && r.OK {
		return exitOK
	}
	if r.Error == nil {
		c.out("  → %d: the simulator refused it: %s", r.Status, r.Body)
		return exitNo
	}
	c.out("  → refused: %s: %s", r.Error.Code, r.Error.Message)
	switch r.Error.Code {
	case "NET_CONFIRM_DENIED":
		c.out("  (nothing was sent; run %s to try again)", c.cmdLine("demo"))
	case "NET_AUTH_FAILED":
		c.out("  the simulator no longer knows this link: %s, then %s", c.cmdLine("demo --remove"), c.cmdLine("demo"))
	}
	return exitNo
}

// demoScan is snugd ctl demo scan PAYLOAD: the simulator "scans" the code,
// as a phone would, through its side channel in the session directory
// beside the daemon's data.
func (c *ctl) demoScan(ctx context.Context, payload string) int {
	dir := linkdevice.SessionDirOf(filepath.Join(c.dataDir, "helpers"), linkdevice.SessionKey{HelperID: "sim", AppID: demoApp, Slot: demoSlot})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	result, err := linkdevice.ScanSim(ctx, dir, payload)
	switch {
	case errors.Is(err, linkdevice.ErrNotSimPayload):
		// Not repeated: whatever was pasted is not echoed.
		fmt.Fprintf(c.e.stderr, "%s: that is not the simulator's code: copy the whole SNUGSIM1:… text %s shows\n", c.name, c.cmdLine("demo"))
		return exitUsage
	case errors.Is(err, linkdevice.ErrNoSimSession):
		fmt.Fprintf(c.e.stderr, "%s: no simulator session in %s: run %s first, and scan the code it shows\n", c.name, c.dataDir, c.cmdLine("demo"))
		return exitNo
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(c.e.stderr, "%s: the simulator did not answer: no link is waiting for a scan (run %s, and scan the code it shows)\n", c.name, c.cmdLine("demo"))
		return exitNo
	case errors.Is(err, os.ErrPermission):
		fmt.Fprintf(c.e.stderr, "%s: permission denied on %s\nhint: run it as the user snugd runs as (or root)\n", c.name, dir)
		return exitNo
	case err != nil:
		return c.fail(err)
	}
	if result != "linked" {
		c.out("the simulator says: %s", result)
		c.out("the code changes every 20 s: copy the newest line %s shows", c.cmdLine("demo"))
		return exitNo
	}
	c.out("scanned: the simulator linked; %s carries on in its terminal", c.cmdLine("demo"))
	return exitOK
}

// demoRemove revokes the demo's connection. The row stays, revoked, as
// every revoked connection does; snugd ctl demo proposes it again.
func (c *ctl) demoRemove(ctx context.Context) int {
	cn, found, err := c.demoConnection(ctx)
	if err != nil {
		return c.fail(err)
	}
	if !found || cn.Status == "revoked" {
		c.out("there is no demo to remove: %s/%s is not connected", demoApp, demoSlot)
		return exitOK
	}
	if !isDemoRow(cn) {
		fmt.Fprintf(c.e.stderr, "%s: %s/%s is not the demo's simulator connection; not revoking it (snugd ctl revoke does, if you mean to)\n", c.name, demoApp, demoSlot)
		return exitNo
	}
	if _, err := c.client.Revoke(ctx, demoApp, demoSlot); err != nil {
		return c.fail(err)
	}
	c.out("%s/%s revoked: its token is wiped and the simulator unlinked", demoApp, demoSlot)
	c.out("the revoked row stays, as every revoked connection does; %s sets it up again", c.cmdLine("demo"))
	return exitOK
}

// cmdLine is "snugd ctl ARGS" as a person types it in another terminal
// to reach this daemon: with --data-dir when the directory is not the one
// found without flags, and with sudo when this runs as root.
func (c *ctl) cmdLine(args string) string {
	line := "snugd ctl " + args
	plain := func(k string) string {
		if k == dataDirEnv {
			return ""
		}
		return c.e.getenv(k)
	}
	if def, err := resolveDataDir(plain, ""); err != nil || def != c.dataDir {
		line = "snugd ctl --data-dir " + shellWord(c.dataDir) + " " + args
	}
	if os.Geteuid() == 0 {
		line = "sudo " + line
	}
	return line
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
