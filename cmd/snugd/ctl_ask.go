package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// interactive reports whether r is a terminal, as the terminal driver
// answers it. A pipe, a file, a test's buffer or a character device that
// is no tty (/dev/null) is not, and snugd ctl then never asks: an act that
// needs a person's yes needs --yes instead.
func interactive(r io.Reader) bool {
	return isTerminal(r)
}

// confirm asks question on a terminal and reports whether the answer was
// yes ("y" or "yes"). Without a terminal it does not ask: it reports
// false with a message naming --yes. yes (the --yes flag) answers for the
// person. When it reports false, code is the exit status to return: 2
// without a terminal (a usage error), 1 when the person said no.
func (c *ctl) confirm(yes bool, question string) (ok bool, code int) {
	if yes {
		return true, exitOK
	}
	if !interactive(c.e.stdin) {
		fmt.Fprintf(c.e.stderr, "%s: not asking without a terminal: pass --yes once you have read what it does\n", c.name)
		return false, exitUsage
	}
	fmt.Fprintf(c.e.stdout, "%s [y/N] ", question)
	line, _ := bufio.NewReader(io.LimitReader(c.e.stdin, 256)).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, exitOK
	}
	fmt.Fprintf(c.e.stderr, "%s: not done\n", c.name)
	return false, exitNo
}
