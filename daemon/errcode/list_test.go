package errcode

// List returns every registered code, in registry order: the frame protocol's
// codes, then the net registry, then codes added later, each appended at
// the end. The returned slice is the caller's own copy. Only the tests
// walk the whole registry; testdata/codes.golden is its reviewed form.
func List() []Entry {
	t := table()
	return t[:]
}
