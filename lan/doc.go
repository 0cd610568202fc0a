// Package lan is mDNS discovery of Hue bridges (grandcat/zeroconf) and the
// exchange pairing with its verify probe. It returns plain structs and takes
// its *http.Client from the caller. Its implementation comes with the LAN
// issue; the folder exists so the import arrows are fixed from the start.
//
// Imports: the standard library, zeroconf and daemon's leaf vocabulary.
// Never transports, never daemon.
package lan
