//go:build !unix

package store

func permissiveUmask() {}
