//go:build windows

package main

import "io/fs"

// checkConfigFileMode accepts every file: Windows has no mode bits, and the
// ACL the data directory inherits decides who may write config.json (see
// packaging/windows.md).
func checkConfigFileMode(fs.FileInfo) error { return nil }
