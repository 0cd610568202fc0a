//go:build unix

package store

import (
	"os"
	"syscall"
)

func (f foreignOwned) Sys() any {
	st := *f.FileInfo.Sys().(*syscall.Stat_t)
	st.Uid = uint32(os.Geteuid() + 1)
	return &st
}
