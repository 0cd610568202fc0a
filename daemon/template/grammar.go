package template

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the flat template grammar: the parser that turns one
// template value into a program (a list of parts) or into findings. See
// doc.go for the grammar in EBNF.

// maxValueLen is the bound on one template value, in characters.
// Characters are counted as UTF-16 code units, as the spec's
// JavaScript reference counts a string's length; this is never laxer than
// counting code points.
const maxValueLen = 300

// maxParseLen bounds the bytes of an over-long value the lint still parses
// for further findings. Reporting a position costs time linear in the value,
// so an unbounded value with many findings would cost quadratic time.
const maxParseLen = 4 * maxValueLen

// A helper is one member of the pinned helper enum, or hValue
// for a placeholder that places a single operand.
type helper uint8

const (
	hValue helper = iota
	hTimestamp
	hBase64
	hHMACSHA256
	hHMACSHA256B64
	hCDPJWT
)

// lookupHelper resolves a helper name. The enum is a switch, not a table, so
// that nothing can add a member at run time (an unused helper is
// reachable signing surface).
func lookupHelper(name string) (helper, bool) {
	switch name {
	case "timestamp":
		return hTimestamp, true
	case "base64":
		return hBase64, true
	case "hmac_sha256":
		return hHMACSHA256, true
	case "hmac_sha256_b64":
		return hHMACSHA256B64, true
	case "cdp_jwt":
		return hCDPJWT, true
	}
	return hValue, false
}

// helperNames lists the enum for messages and for the field-key check.
func helperNames() [5]string {
	return [5]string{"timestamp", "base64", "hmac_sha256", "hmac_sha256_b64", "cdp_jwt"}
}

func (h helper) String() string {
	if h == hValue {
		return "value"
	}
	return helperNames()[h-1]
}

// arity reports the fixed arity of a helper: the least and the most
// arguments it takes.
func (h helper) arity() (least, most int) {
	switch h {
	case hTimestamp:
		return 0, 0
	case hBase64:
		return 1, 1
	case hHMACSHA256, hCDPJWT:
		return 2, 2
	case hHMACSHA256B64:
		return 2, 6
	}
	return 1, 1
}

// An opKind says where an operand's text comes from at render time.
type opKind uint8

const (
	opNone         opKind = iota // unresolved: only in a program that has findings
	opText                       // a quoted literal or static text, verbatim
	opField                      // a declared field's value
	opMethod                     // request.method
	opURL                        // request.url
	opPathAndQuery               // request.pathAndQuery
	opBody                       // request.body
	opTimestamp                  // request.timestamp: the pass's memoized timestamp
)

// lookupToken resolves a pinned request token (exactly these five).
func lookupToken(name string) (opKind, bool) {
	switch name {
	case "request.method":
		return opMethod, true
	case "request.url":
		return opURL, true
	case "request.pathAndQuery":
		return opPathAndQuery, true
	case "request.body":
		return opBody, true
	case "request.timestamp":
		return opTimestamp, true
	}
	return opNone, false
}

func requestTokens() [5]string {
	return [5]string{"request.method", "request.url", "request.pathAndQuery", "request.body", "request.timestamp"}
}

// An operand is one value a part reads. A quoted literal is an opText
// operand whose text is the literal's content: the renderer copies it and
// never looks it up (the disclosure rule).
type operand struct {
	kind  opKind
	field int    // opField: index into Set.keys
	text  string // opText
}

// A part is one piece of a compiled template: static text, a placed
// operand, or one helper call over operands. An argument is an operand,
// never a part, so a nested call has no representation and cannot be
// evaluated.
type part struct {
	helper helper
	args   []operand // hValue: exactly one
}

// A program is one compiled template value.
type program struct {
	parts     []part
	usesField bool // some operand reads a field: the rendered value is a scrub candidate
}

// parser reads one template value. Findings go to p.findings; p.bad is set
// by every finding, and a bad value yields no program.
type parser struct {
	src      string
	path     string
	pos      int
	res      *resolver
	findings []Finding
	offs     []int // byte offset of each finding, -1 for the whole value
	bad      bool
	open     int // offset of the placeholder being parsed

	lit   []byte // static text and directly placed literals not yet flushed
	parts []part
	field bool
}

// parseValue lints one template value at path and, when it is clean,
// returns its program.
func parseValue(res *resolver, path, src string) (program, []Finding) {
	p := &parser{src: src, path: path, res: res}
	if !utf8.ValidString(src) {
		p.fail(RuleNonPrintable, "template value is not valid UTF-8")
		return program{}, p.sorted()
	}
	if n := utf16Len(src); n > maxValueLen {
		p.fail(RuleTooLong, fmt.Sprintf("template value is %d characters; the limit is %d", n, maxValueLen))
		if len(src) > maxParseLen {
			return program{}, p.sorted() // far too long to be a template: not worth a lint
		}
	}
	p.run()
	if p.bad {
		return program{}, p.sorted()
	}
	p.flush()
	return program{parts: p.parts, usesField: p.field}, nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Width(r)
	}
	return n
}

func utf16Width(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// fail records a finding about the whole value.
func (p *parser) fail(rule, msg string) { p.record(-1, rule, msg) }

// failAt records a finding at byte offset off, reported as a 1-based
// character position.
func (p *parser) failAt(rule string, off int, msg string) {
	p.record(off, rule, fmt.Sprintf("%s (at position %d)", msg, p.column(off)))
}

func (p *parser) record(off int, rule, msg string) {
	p.bad = true
	p.findings = append(p.findings, Finding{Path: p.path, Rule: rule, Message: msg})
	p.offs = append(p.offs, off)
}

// sorted returns the findings in the order of their position (a call's
// arity finding is found after its arguments but stands at its name).
func (p *parser) sorted() []Finding {
	idx := make([]int, len(p.findings))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p.offs[a], p.offs[b]) })
	out := make([]Finding, len(idx))
	for i, j := range idx {
		out[i] = p.findings[j]
	}
	return out
}

func (p *parser) column(off int) int {
	if off > len(p.src) {
		off = len(p.src)
	}
	return utf8.RuneCountInString(p.src[:off]) + 1
}

func (p *parser) at(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }

func (p *parser) eof() bool { return p.pos >= len(p.src) }

// run scans literal text and placeholders. "{{" always opens a placeholder,
// leftmost first; a lone "{" or "}" is text; "}}" outside a placeholder is
// an error.
func (p *parser) run() {
	for !p.eof() {
		c := p.src[p.pos]
		switch {
		case c == '{' && p.at("{{"):
			p.placeholder()
		case c == '}' && p.at("}}"):
			p.failAt(RuleStrayClose, p.pos, "stray }} outside a placeholder")
			p.pos += 2
		case isPrintableASCII(c):
			p.lit = append(p.lit, c)
			p.pos++
		default:
			r, size := utf8.DecodeRuneInString(p.src[p.pos:])
			p.failAt(RuleNonPrintable, p.pos, describeRune(r)+" in static text: static text is printable ASCII")
			p.pos += size
		}
	}
}

func isPrintableASCII(c byte) bool { return c >= 0x20 && c <= 0x7e }

// placeholder parses "{{" expr "}}". After a syntax error it skips to the
// next "}}" so that the rest of the value is still linted.
func (p *parser) placeholder() {
	start := p.pos
	p.open = start
	p.pos += 2
	p.spaces()
	if p.at("}}") {
		p.failAt(RuleEmptyPlaceholder, start, "empty placeholder {{}}")
		p.pos += 2
		return
	}
	if p.eof() {
		p.failAt(RuleUnclosed, start, "placeholder {{ is never closed with }}")
		return
	}
	pt, ok := p.expr(start, 0)
	if !ok {
		p.resync()
		return
	}
	p.spaces()
	switch {
	case p.at("}}"):
		p.pos += 2
		p.emit(pt)
	case p.eof():
		p.failAt(RuleUnclosed, start, "placeholder {{ is never closed with }}")
	default:
		p.unexpected("a placeholder holds one expression: expected }}")
		p.resync()
	}
}

// resync skips past the next "}}" after a syntax error.
func (p *parser) resync() {
	if i := strings.Index(p.src[p.pos:], "}}"); i >= 0 {
		p.pos += i + 2
		return
	}
	p.pos = len(p.src)
}

// emit appends a placed part. Placed text (a directly placed literal) joins
// the static text around it. Once the value has a finding nothing is kept:
// a value with a finding never becomes a program.
func (p *parser) emit(pt part) {
	if p.bad {
		return
	}
	if pt.helper == hValue && pt.args[0].kind == opText {
		p.lit = append(p.lit, pt.args[0].text...)
		return
	}
	p.flush()
	p.parts = append(p.parts, pt)
}

func (p *parser) flush() {
	if len(p.lit) > 0 {
		p.parts = append(p.parts, part{helper: hValue, args: []operand{{kind: opText, text: string(p.lit)}}})
		p.lit = p.lit[:0]
	}
}

// spaces skips ASCII spaces. Any other whitespace is a finding and is then
// skipped as if it were a space, so the lint goes on.
func (p *parser) spaces() {
	for !p.eof() {
		c := p.src[p.pos]
		if c == ' ' {
			p.pos++
			continue
		}
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		if !isWhitespace(r) {
			return
		}
		p.failAt(RuleWhitespace, p.pos, describeRune(r)+" inside a placeholder: only ASCII spaces may surround an expression")
		p.pos += size
	}
}

func isWhitespace(r rune) bool {
	return unicode.IsSpace(r) || r == '\u200b' || r == '\u2060' || r == '\ufeff'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c == '.' }

// unexpected records a syntax finding for the character at p.pos. When no
// "}}" follows, the placeholder is unclosed, and that is the finding.
func (p *parser) unexpected(want string) {
	if !strings.Contains(p.src[p.pos:], "}}") {
		p.failAt(RuleUnclosed, p.open, "placeholder {{ is never closed with }}")
		return
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	what := describeRune(r)
	if r == '\'' {
		what = "stray quote '"
	}
	p.failAt(RuleSyntax, p.pos, "unexpected "+what+": "+want)
}

// expr parses the expression of a placeholder (depth 0) or of a call
// argument (depth > 0). ok is false after a syntax error; semantic findings
// (unknown names, arity) leave ok true so that parsing goes on.
func (p *parser) expr(start, depth int) (part, bool) {
	c := p.src[p.pos]
	switch {
	case c == '\'':
		s, ok := p.literal(depth == 0)
		return part{helper: hValue, args: []operand{{kind: opText, text: s}}}, ok
	case isIdentStart(c):
		nameAt := p.pos
		name := p.ident()
		if p.callFollows(nameAt, name) {
			return p.call(start, nameAt, name, depth)
		}
		return part{helper: hValue, args: []operand{p.resolve(nameAt, name)}}, true
	}
	p.unexpected("expected a field key, a request token, a quoted literal or a helper call")
	return part{}, false
}

func (p *parser) ident() string {
	start := p.pos
	for !p.eof() && isIdentByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// callFollows reports whether "(" follows the identifier, consuming it.
// Spaces between a helper's name and "(" are a finding: spaces may surround
// an expression and its arguments, not split a call.
func (p *parser) callFollows(nameAt int, name string) bool {
	i := p.pos
	for i < len(p.src) && p.src[i] == ' ' {
		i++
	}
	if i >= len(p.src) || p.src[i] != '(' {
		return false
	}
	if i > p.pos {
		p.failAt(RuleSyntax, p.pos, "space between helper "+clip(name)+" and (")
	}
	p.pos = i + 1
	return true
}

// call parses a helper call whose "(" has been consumed.
func (p *parser) call(start, nameAt int, name string, depth int) (part, bool) {
	h, known := lookupHelper(name)
	switch {
	case depth > 0:
		p.failAt(RuleNestedCall, nameAt, "nested call "+clip(name)+"(…): a helper call is a placeholder form, never an argument")
	case !known:
		p.failAt(RuleUnknownHelper, nameAt, unknownHelperMessage(name))
	}
	var args []operand
	var argAt []int
	var argLit []bool
	p.spaces()
	if p.eof() {
		p.failAt(RuleUnclosed, start, "placeholder {{ is never closed with }}")
		return part{}, false
	}
	if p.src[p.pos] == ')' {
		p.pos++
	} else {
		for {
			p.spaces()
			if p.eof() {
				p.failAt(RuleUnclosed, start, "placeholder {{ is never closed with }}")
				return part{}, false
			}
			if c := p.src[p.pos]; c == ',' || c == ')' {
				p.unexpected("expected an argument")
				return part{}, false
			}
			at := p.pos
			isLit := p.src[p.pos] == '\''
			a, ok := p.expr(start, depth+1)
			if !ok {
				return part{}, false
			}
			var o operand // a nested call leaves opNone: it is a finding already
			if a.helper == hValue && len(a.args) == 1 {
				o = a.args[0]
			}
			args, argAt, argLit = append(args, o), append(argAt, at), append(argLit, isLit)
			p.spaces()
			if p.eof() {
				p.failAt(RuleUnclosed, start, "placeholder {{ is never closed with }}")
				return part{}, false
			}
			if p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.src[p.pos] == ')' {
				p.pos++
				break
			}
			p.unexpected("expected , or ) after an argument")
			return part{}, false
		}
	}
	if depth > 0 || !known {
		return part{}, true
	}
	least, most := h.arity()
	if len(args) < least || len(args) > most {
		p.failAt(RuleArity, nameAt, arityMessage(h, len(args)))
	}
	if h == hCDPJWT {
		// Both cdp_jwt arguments MUST be declared field keys.
		for i, o := range args {
			switch {
			case argLit[i]:
				p.failAt(RuleCDPJWTArgument, argAt[i], fmt.Sprintf("argument %d of cdp_jwt is a quoted literal: both arguments must be declared field keys", i+1))
			case o.kind != opField && o.kind != opNone:
				p.failAt(RuleCDPJWTArgument, argAt[i], fmt.Sprintf("argument %d of cdp_jwt is a request token: both arguments must be declared field keys", i+1))
			}
		}
	}
	return part{helper: h, args: args}, true
}

func arityMessage(h helper, n int) string {
	least, most := h.arity()
	want := fmt.Sprintf("%d", least)
	switch {
	case least != most:
		want = fmt.Sprintf("%d to %d", least, most)
	case least == 1:
		want = "exactly 1"
	case least > 1:
		want = fmt.Sprintf("exactly %d", least)
	}
	noun := "arguments"
	if least == 1 && most == 1 {
		noun = "argument"
	}
	return fmt.Sprintf("%s takes %s %s, not %d", h, want, noun, n)
}

func unknownHelperMessage(name string) string {
	names := helperNames()
	msg := "unknown helper " + clip(name)
	if near := nearest(name, names[:]); editDistance(name, near) <= 2 {
		msg += ": did you mean " + near + "?"
	}
	return msg + " (the helpers are " + strings.Join(names[:], ", ") + ")"
}

// resolve maps an identifier to an operand through the requirement's one
// resolution of its field keys. Anything else is an unknown identifier:
// there is no fallback that reads it as text.
func (p *parser) resolve(at int, name string) operand {
	if k, ok := lookupToken(name); ok {
		return operand{kind: k}
	}
	if i, ok := p.res.field(name); ok {
		p.field = true
		return operand{kind: opField, field: i}
	}
	msg := "unknown identifier " + clip(name)
	if _, isHelper := lookupHelper(name); isHelper {
		msg += ": " + name + " is a helper, call it as " + name + "()"
	} else if near := p.res.nearest(name); near != "" {
		msg += ": did you mean " + near + "?"
	}
	p.failAt(RuleUnknownIdentifier, at, msg)
	return operand{}
}

// literal parses a single-quoted literal at p.pos. direct says the literal
// is placed directly (printable ASCII only); a helper argument may hold any
// character but a control or format character. The only escapes are \' and
// \\.
func (p *parser) literal(direct bool) (string, bool) {
	start := p.pos
	p.pos++
	var b strings.Builder
	for !p.eof() {
		c := p.src[p.pos]
		switch {
		case c == '\'':
			p.pos++
			return b.String(), true
		case c == '\\':
			if p.pos+1 < len(p.src) && (p.src[p.pos+1] == '\'' || p.src[p.pos+1] == '\\') {
				b.WriteByte(p.src[p.pos+1])
				p.pos += 2
				continue
			}
			if p.pos+1 < len(p.src) {
				r, _ := utf8.DecodeRuneInString(p.src[p.pos+1:])
				p.failAt(RuleBadEscape, p.pos, "backslash before "+describeRune(r)+" in a literal: the only escapes are \\' and \\\\")
			} else {
				p.failAt(RuleBadEscape, p.pos, "backslash at the end of a literal: the only escapes are \\' and \\\\")
			}
			p.pos++
		case isPrintableASCII(c):
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRuneInString(p.src[p.pos:])
			switch {
			case direct:
				p.failAt(RuleNonPrintable, p.pos, describeRune(r)+" in a literal placed directly: only a helper's argument may hold characters outside printable ASCII")
			case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
				p.failAt(RuleNonPrintable, p.pos, describeRune(r)+" in a literal: control and format characters are never allowed")
			default:
				b.WriteString(p.src[p.pos : p.pos+size])
			}
			p.pos += size
		}
	}
	p.failAt(RuleUnterminatedLiteral, start, "quoted literal is never closed with '")
	return "", false
}

// describeRune names a character for a message without printing characters
// that would garble it.
func describeRune(r rune) string {
	switch r {
	case '\t':
		return "tab (U+0009)"
	case '\n':
		return "line feed (U+000A)"
	case '\r':
		return "carriage return (U+000D)"
	case 0:
		return "NUL (U+0000)"
	}
	if r < 0x80 && isPrintableASCII(byte(r)) {
		return fmt.Sprintf("character %q", r)
	}
	return fmt.Sprintf("character U+%04X", r)
}

// clip bounds an identifier quoted in a message.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}
