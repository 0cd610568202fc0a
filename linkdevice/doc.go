// Package linkdevice is the linked-device helper protocol, the helper
// supervisor, device-link (QR) flows and the reference simulator helper
// (DESIGN.md, "Linked-device helpers"). Its implementation comes with the
// linked-device issue; the folder exists so the import arrows are fixed.
//
// Imports: the standard library, qrterminal and daemon's leaf vocabulary.
// Never daemon.
package linkdevice
