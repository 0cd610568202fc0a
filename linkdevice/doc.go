// Package linkdevice hosts linked-device helpers (DESIGN.md, "Linked-device
// helpers and the sidecar symbolic host"): separate programs that each hold
// one device session with one provider, the way a messaging app's linked
// device does, paired by scanning a QR code.
//
// It holds four things:
//
//   - the helper protocol, newline-delimited JSON-RPC 2.0 over a helper's
//     stdin and stdout, written down in PROTOCOL.md so a helper can be
//     written in any language; Client is snugd's side of one session and
//     Server (NewServer, Server.Serve) a Go helper's side;
//   - the Supervisor, which starts helper sessions on demand, one process
//     per (helper, app, slot), restarts them with bounded backoff and
//     routes calls to them;
//   - QR drawing: RenderQR (half blocks for a terminal, via qrterminal)
//     and QRPNG (an image for GET /v1/flows/{id}?format=png);
//   - the simulator helper, RunSim, shipped as the hidden snugd helper sim.
//
// # What the daemon calls
//
// main builds one Supervisor from a literal table and runs it beside the
// daemon:
//
//	sup, err := linkdevice.New(linkdevice.Config{
//		Helpers:  map[string]linkdevice.Spec{"sim": {Executable: "snugd", Args: []string{"helper", "sim"}}},
//		Dir:      installDir,                        // filepath.Dir(os.Executable()) or config.json's helperDir
//		StateDir: filepath.Join(dataDir, "helpers"), // session directories, 0700
//		Env:      []string{"PATH=" + os.Getenv("PATH")},
//		Logger:   log,
//		Scrub:    scrub,  // the daemon's credential scrub, for helper stderr
//		OnEvent:  onEvent, // flows: EventQR, EventLinkStatus; hints: EventState
//		Confine:  []string{exe, "helper", linkdevice.ConfineCommand}, // snugd's own executable
//	})
//	go sup.Run(ctx) // returns after every helper has shut down
//
// A session is named by SessionKey{HelperID, AppID, Slot}. The daemon calls:
//
//   - Do(ctx, key, Request{Method, PathAndQuery, Header, Body, Token}) at
//     gate 6a, the token read from the slot's credential slice; the
//     Response gets gates 9 and 10 like any other. ErrResponseTooLarge is
//     NET_SIZE_EXCEEDED, ErrUnauthorized and ErrNotLinked NET_AUTH_FAILED,
//     ErrOutOfBounds NET_INVALID_REQUEST, every other error
//     NET_FETCH_FAILED (nothing falls back to the network; ErrTooMany, the
//     64-session cap, too);
//   - StartLink(ctx, key) for POST …/{slot}/link/start (it also gives a
//     failed helper a fresh restart budget), then codes arrive as EventQR;
//   - PollLink(ctx, key) when EventLinkStatus says linked (or on a timer):
//     the one Poll that carries Token is the only one that ever will, so
//     the caller verifies it and commits it at once;
//   - Verify(ctx, key, token) before that commit (verify-before-claim) and
//     as a health probe;
//   - CancelLink(ctx, key) when the user cancels a flow;
//   - Unlink(ctx, key) on revoke: the helper forgets the session, its
//     process stops and its directory is removed, even if the helper
//     cannot be reached;
//   - Status() for GET /v1/status and snugd ctl status: per session its
//     State, Restarts and LastError (a fixed sentence); HelperStatus()
//     folds them into one line per registered helper, sessions or not.
//
// For the flow's answers the API calls QRPNG(payload) (?format=png), and
// snugd ctl pair link calls RenderLinkScreen(w, qr, now, columns, true)
// for each new code and once a second for the time left. The registry
// entry sim's standing target rule is {Method: SimSendMethod,
// PathPattern: SimSendPath, BodyField: SimTargetField}.
//
// Confinement (confine*.go): with Config.Confine set, every helper starts
// through RunConfine, which main serves as the hidden snugd helper
// confine. On Linux it is a per-session subreaper that ends every
// descendant with the session, and a Landlock sandbox (the system's
// libraries, the helper's executable, its session directory; no network
// the Spec does not declare) with no_new_privs. Status, Confinement and
// Probe report the level reached; PROTOCOL.md section 11 says what each system
// narrows.
//
// Helpers are found only through the table: a Spec's Executable is a bare
// file name looked up in Config.Dir, never a path, and nothing an app or a
// requirement says can name one. A helper never sees snugd's environment.
//
// Imports: the standard library, qrterminal and rsc.io/qr, go-landlock and
// x/sys/unix (Linux confinement), internal/names (the label rule),
// daemon/scrub (stderr), and daemon's leaf vocabulary. Never daemon.
package linkdevice
