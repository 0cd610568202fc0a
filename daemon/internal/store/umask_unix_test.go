//go:build unix

package store

import "syscall"

func permissiveUmask() { syscall.Umask(0) }
