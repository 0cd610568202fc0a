package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
)

// cmdCtl is snugd ctl [--data-dir DIR] COMMAND … [--json].
func cmdCtl(ctx context.Context, e env, args []string) int {
	if len(args) > 0 && args[0] == "template" {
		return cmdTemplate(ctx, e, args[1:])
	}
	fmt.Fprintln(e.stderr, "snugd ctl: not built yet")
	return exitNo
}

// parseCtlArgs parses flags and positional arguments in any order ("hosts
// approve CODE --json" as well as "--json hosts approve CODE"); "--" ends
// the flags. It returns the positional arguments, or false and the exit
// status: 0 after -h, 2 after a usage error, or when there are more than
// maxArgs positional arguments. A surplus argument is never repeated: it
// may be a credential pasted where it does not belong.
func parseCtlArgs(flags *flag.FlagSet, args []string, maxArgs int) ([]string, int, bool) {
	var pos []string
	for {
		if err := flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := flags.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) > maxArgs {
		fmt.Fprintf(flags.Output(), "%s: unexpected argument #%d (not repeated here; credential values are never taken from the command line)\n", flags.Name(), maxArgs+1)
		return nil, exitUsage, false
	}
	return pos, 0, true
}
