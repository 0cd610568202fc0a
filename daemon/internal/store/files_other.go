//go:build !unix

package store

import "io/fs"

// modesMatter is false where Go synthesizes mode bits (Windows: the
// data directory's ACL guards the files; the service's default directory
// under %ProgramData% is administrators-and-SYSTEM only). The store neither
// checks nor sets modes there.
const modesMatter = false

const noFollow = 0

func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// syncDir is a no-op: a directory cannot be synced here, and renames are
// durable once the file itself was synced.
func syncDir(string) error { return nil }
