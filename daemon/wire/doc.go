// Package wire is Part I's vocabulary: the thirteen frame types, their
// parsers and limits, the published JSON Schemas and the chat envelope.
//
// Imports: the standard library and daemon/errcode only. Every folder may
// import it, and a Go host can use it as it is.
package wire
