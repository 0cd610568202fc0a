package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether r or w (a command's stdin or stdout) is a
// terminal. Only an *os.File can be one: tests pass buffers.
func isTerminal(rw any) bool {
	f, ok := rw.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// readPassword reads one line from the terminal stdin without echoing it.
// The prompt goes to w (stderr), so a redirected stdout stays clean.
func readPassword(stdin any, w io.Writer, prompt string) ([]byte, error) {
	io.WriteString(w, prompt)
	defer io.WriteString(w, "\n")
	return term.ReadPassword(int(stdin.(*os.File).Fd()))
}
