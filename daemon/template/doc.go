// Package template is the credential template language of spec §12.8–§12.9
// (ruling R15): the lint a requirement passes before it is reviewed, stored
// or rendered, and the render engine that turns declared credential fields
// into header and query values.
//
// Imports: the standard library and golang.org/x/crypto only.
package template
