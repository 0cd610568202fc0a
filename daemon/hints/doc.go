// Package hints is the doorbell of /v1/events: a bus of references (ids,
// an app and a slot) that any part publishes and the API's event stream
// subscribes to. A hint never carries content.
//
// Imports: the standard library only.
package hints
