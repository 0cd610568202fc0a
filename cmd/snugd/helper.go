package main

import (
	"context"
	"fmt"

	"github.com/snug/snugd/linkdevice"
)

// cmdHelper is the hidden snugd helper NAME [flags]: a linked-device
// helper shipped inside snugd, speaking linkdevice/PROTOCOL.md on stdin
// and stdout with its log on stderr. The supervisor starts it; a person
// never needs to. Only the simulator exists: snugd helper sim. Beside it,
// snugd helper confine [flags] -- EXECUTABLE [ARG]… is how the supervisor
// starts any helper confined (linkdevice.RunConfine: on Linux a
// per-session subreaper, then Landlock and no_new_privs, then exec).
func cmdHelper(ctx context.Context, e env, args []string) int {
	if len(args) > 0 && args[0] == linkdevice.ConfineCommand {
		return linkdevice.RunConfine(args[1:], e.stderr)
	}
	if len(args) == 0 || args[0] != "sim" {
		fmt.Fprintln(e.stderr, "usage: snugd helper sim [--rotate D] [--codes N] [--label TEXT] [--send-limit N]")
		return exitUsage
	}
	if err := linkdevice.RunSim(ctx, args[1:], e.stdin, e.stdout, e.stderr); err != nil {
		fmt.Fprintf(e.stderr, "snugd helper sim: %v\n", err)
		return exitNo
	}
	return exitOK
}
