package starter

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/requirement"
)

// data holds the bundled starters: data/<id>/index.html and
// data/<id>/connection.json.
//
//go:embed data
var data embed.FS

// Limits of a bundled starter.
const (
	// MaxHTML is the largest starter HTML: the artifact size limit.
	MaxHTML = 5 << 20
	// MaxRequirements is AUTH_MAX_SLOTS_PER_APP: a starter cannot
	// declare more slots than an app may hold.
	MaxRequirements = 8
)

// The two files of a starter directory.
const (
	htmlFile       = "index.html"
	connectionFile = "connection.json"
)

// A Catalog is the set of bundled starters, loaded and validated. It is
// immutable and safe for concurrent use.
type Catalog struct {
	starters map[string]*starter
}

type starter struct {
	id   string
	html []byte
	sum  [sha256.Size]byte
	// connection is connection.json as bundled; canonical holds each
	// requirement's canonical form, parsed again for every Manifest so no
	// caller shares a value with the catalog.
	connection []byte
	canonical  []string
}

// A Manifest is one bundled starter, as Vouch and Lookup return it: a copy
// the caller may keep and change.
type Manifest struct {
	ID string
	// HTML is the starter's single-file app, byte for byte as bundled.
	HTML []byte
	// SHA256 is the lowercase hex SHA-256 of HTML.
	SHA256 string
	// Connection is the starter's connection.json as bundled: a JSON array
	// of requirement objects.
	Connection []byte
	// Requirements are the parsed requirements of Connection, in order.
	Requirements []*requirement.Requirement
}

// Load loads and validates the bundled starters. Every requirement of
// every connection.json passes requirement.Parse with zero Options: a
// starter manifest is not the registry, so it may never carry a userLayer.
// The daemon refuses to start when Load fails.
func Load() (*Catalog, error) {
	sub, err := fs.Sub(data, "data")
	if err != nil {
		return nil, err
	}
	return load(sub)
}

// load reads every directory at the root of fsys as one starter.
func load(fsys fs.FS) (*Catalog, error) {
	dirs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	c := &Catalog{starters: make(map[string]*starter)}
	var errs []error
	for _, d := range dirs {
		s, err := loadStarter(fsys, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.starters[s.id] = s
	}
	if len(dirs) == 0 {
		errs = append(errs, errors.New("starter: no bundled starters"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func loadStarter(fsys fs.FS, d fs.DirEntry) (*starter, error) {
	id := d.Name()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("starter %s: "+format, append([]any{id}, args...)...)
	}
	if !d.IsDir() || !requirement.ValidSlot(id) {
		return nil, fail("a starter is a directory named like a slot, %s", requirement.SlotPattern)
	}
	files, err := fs.ReadDir(fsys, id)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if !slices.Equal(names, []string{connectionFile, htmlFile}) {
		return nil, fail("a starter holds exactly %s and %s", htmlFile, connectionFile)
	}
	html, err := fs.ReadFile(fsys, id+"/"+htmlFile)
	if err != nil {
		return nil, err
	}
	if len(html) == 0 || len(html) > MaxHTML || !utf8.Valid(html) {
		return nil, fail("%s must be 1 to %d bytes of UTF-8", htmlFile, MaxHTML)
	}
	conn, err := fs.ReadFile(fsys, id+"/"+connectionFile)
	if err != nil {
		return nil, err
	}
	canonical, err := parseConnection(conn)
	if err != nil {
		return nil, fail("%s: %w", connectionFile, err)
	}
	return &starter{id: id, html: html, sum: sha256.Sum256(html), connection: conn, canonical: canonical}, nil
}

// parseConnection validates a connection.json: a JSON array of 1 to
// MaxRequirements requirements, each passing requirement.Parse with zero
// Options (no userLayer), with distinct slots. It returns each
// requirement's canonical form.
func parseConnection(conn []byte) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(conn, &items); err != nil {
		return nil, errors.New("must be a JSON array of requirements")
	}
	if len(items) == 0 || len(items) > MaxRequirements {
		return nil, errors.New("declares 1 to " + strconv.Itoa(MaxRequirements) + " requirements")
	}
	var out []string
	slots := make(map[string]bool)
	for i, item := range items {
		r, vs := requirement.Parse(item, requirement.Options{})
		if len(vs) > 0 {
			return nil, fmt.Errorf("requirement %d: %s", i, vs[0])
		}
		if slots[r.Slot] {
			return nil, fmt.Errorf("requirement %d: slot %s is declared twice", i, r.Slot)
		}
		slots[r.Slot] = true
		out = append(out, r.Canonical())
	}
	return out, nil
}

// IDs returns the bundled starters' IDs, sorted.
func (c *Catalog) IDs() []string {
	ids := make([]string, 0, len(c.starters))
	for id := range c.starters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Lookup returns the bundled starter with this ID.
func (c *Catalog) Lookup(id string) (Manifest, bool) {
	s, ok := c.starters[id]
	if !ok {
		return Manifest{}, false
	}
	return s.manifest(), true
}

// Vouch is the two-fact check. It vouches for an installed app —
// and returns the bundled manifest whose requirements the install act may
// propose — only when both facts hold:
//
//  1. installSource, the app's install_source as the host recorded it,
//     resolves to a bundled starter: it is a starter's ID, byte for byte;
//  2. the installed HTML matches the bundled bytes in both the pinned
//     factory version and the current version: factorySHA256 and
//     currentSHA256, each the SHA-256 of that version's HTML as 64 hex
//     digits (either case), both equal the bundled HTML's digest. The
//     digests are compared in constant time.
//
// Any mismatch, or a digest that is not 64 hex digits, means the
// declaration is not vouched: Vouch returns the zero Manifest and false,
// and the caller treats the starter's declaration as absent — it writes no
// row from it. On success the caller proposes Manifest.Requirements, the
// bundled declaration, never a connection.json the host sent along.
func (c *Catalog) Vouch(installSource, factorySHA256, currentSHA256 string) (Manifest, bool) {
	factory, okFactory := decodeDigest(factorySHA256)
	current, okCurrent := decodeDigest(currentSHA256)
	s, ok := c.starters[installSource]
	if !ok {
		return Manifest{}, false
	}
	match := subtle.ConstantTimeCompare(factory[:], s.sum[:]) & subtle.ConstantTimeCompare(current[:], s.sum[:])
	if !okFactory || !okCurrent || match != 1 {
		return Manifest{}, false
	}
	return s.manifest(), true
}

// decodeDigest reads a SHA-256 digest written as 64 hex digits.
func decodeDigest(s string) ([sha256.Size]byte, bool) {
	var d [sha256.Size]byte
	if len(s) != hex.EncodedLen(sha256.Size) {
		return d, false
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return [sha256.Size]byte{}, false
	}
	return d, true
}

// manifest returns a copy of s for a caller.
func (s *starter) manifest() Manifest {
	m := Manifest{
		ID:         s.id,
		HTML:       slices.Clone(s.html),
		SHA256:     hex.EncodeToString(s.sum[:]),
		Connection: slices.Clone(s.connection),
	}
	for _, c := range s.canonical {
		// Parsed at load; parsing the canonical form again cannot fail
		// (requirement.Parse documents Parse(r.Canonical()) == r).
		r, _ := requirement.Parse([]byte(c), requirement.Options{})
		m.Requirements = append(m.Requirements, r)
	}
	return m
}
