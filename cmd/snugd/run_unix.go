//go:build unix

package main

import "syscall"

// restrictUmask makes every file snugd creates private by default (umask
// 077, DESIGN.md), on top of the explicit modes each file is created with.
func restrictUmask() { syscall.Umask(0o077) }
