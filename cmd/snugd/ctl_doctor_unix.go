//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileOwner returns ", owner uid N" for a file's owner, or "" when the
// system does not say.
func fileOwner(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf(", owner uid %d", st.Uid)
	}
	return ""
}
