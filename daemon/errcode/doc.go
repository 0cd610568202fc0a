// Package errcode is the registry of stable error codes snugd sends to
// clients: Part I R5's codes and the NET_* codes of the executor (§14, §15).
//
// Imports: the standard library only. Every folder may import it.
package errcode
