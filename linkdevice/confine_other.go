//go:build !linux

package linkdevice

import (
	"fmt"
	"io"
)

// Probe reports the confinement a helper started now would reach: none
// outside Linux (PROTOCOL.md says what macOS and Windows do and do not
// narrow).
func Probe() Confinement { return Confinement{} }

// RunConfine is snugd helper confine, which exists only on Linux.
func RunConfine(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "snugd helper confine: helpers are confined only on Linux")
	return 2
}

// startConfined starts cmd directly: there is nothing to confine it with.
func startConfined(cmd Command) (Process, error) { return startDirect(cmd) }
