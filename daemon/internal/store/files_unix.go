//go:build unix

package store

import (
	"io/fs"
	"os"
	"syscall"
)

// modesMatter reports whether Unix mode bits are what guard a file
// here (they are on every Unix).
const modesMatter = true

// noFollow keeps OpenFile from following a symlink planted at the path.
const noFollow = syscall.O_NOFOLLOW

func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// syncDir makes a rename or a new file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
