package main

import (
	"context"
	"fmt"
)

// The commands below are filled in by their issues; until then they say so.

func cmdCtl(ctx context.Context, e env, args []string) int {
	fmt.Fprintln(e.stderr, "snugd ctl: not built yet")
	return exitNo
}
