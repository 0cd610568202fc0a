package wire

import (
	"embed"
	"strings"
)

// schemaFiles holds the published JSON Schemas (draft 2020-12) of the
// thirteen frames, one file per type named after it without "snug:".
//
//go:embed schemas/*.json
var schemaFiles embed.FS

// SchemaTypes returns the frame types that have a published schema: all
// thirteen, in the order of FrameTypes.
func SchemaTypes() []string { return FrameTypes() }

// Schema returns the JSON Schema of frameType ("snug:net-request"; the
// bare "net-request" is accepted too), and reports whether there is one.
// The bytes are the caller's own copy. The schemas carry what JSON Schema
// can express; the prose rules are enforced only
// by the parsers in this package, and each schema's description says
// which.
func Schema(frameType string) ([]byte, bool) {
	name := strings.TrimPrefix(frameType, typePrefix)
	if name == "" || strings.ContainsAny(name, "/.\\") {
		return nil, false
	}
	b, err := schemaFiles.ReadFile("schemas/" + name + ".json")
	if err != nil {
		return nil, false
	}
	return b, true
}
