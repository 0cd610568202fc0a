//go:build !unix

package main

// restrictUmask has nothing to do here: on Windows the data directory's
// ACL decides who may read what snugd writes (packaging/windows.md).
func restrictUmask() {}
