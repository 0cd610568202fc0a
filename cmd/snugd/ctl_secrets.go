package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"unicode/utf8"
)

// maxValuesSize bounds a credential values document: the API's class for
// credential values (256 KiB) is far more than eight fields need.
const maxValuesSize = 256 << 10

// readSecretInput reads a credential values document from name, or from
// stdin when name is "-" (a file redirected to stdin obeys the file rule). A file must be a regular file that neither group
// nor others may access (0600 or stricter; on Windows its ACL decides): a
// values file others can read is a leaked credential, so it is refused
// rather than used. Errors name the file only once it is known to exist,
// never its contents: a name that opens nothing may be a credential typed
// in the file's place, and is not repeated.
func readSecretInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		// "< file" is the same file as --file: the same mode rule.
		if f, ok := stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
				return nil, fmt.Errorf("standard input is a file with mode %04o: a file holding credentials must not be readable by group or others (chmod 600 it)", fi.Mode().Perm())
			}
		}
		return readBounded(stdin, maxValuesSize, "standard input")
	}
	f, err := openRegular(name)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("the values file cannot be opened: %w (its name is not repeated: a credential goes in the file, or on standard input, never on the command line)", pe.Err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: a file holding credentials must not be readable by group or others (chmod 600 %s)", name, fi.Mode().Perm(), name)
	}
	return readBounded(f, maxValuesSize, name)
}

// readBounded reads all of r, refusing more than limit bytes.
func readBounded(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", what, limit)
	}
	return data, nil
}

// errValuesShape is the one message for a values document that does not
// parse: a decoder's own message could quote a character of a credential.
var errValuesShape = errors.New(`not a JSON object of field key to string value, like {"api_key": "…"}`)

// parseValues decodes a credential values document: one JSON object whose
// keys are field keys, each at most once, and whose values are non-empty
// strings. Errors name keys (which are not secret: a requirement declares
// them) and never a value.
func parseValues(data []byte) (map[string]string, error) {
	if !utf8.Valid(data) {
		return nil, errValuesShape
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errValuesShape
	}
	values := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errValuesShape
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errValuesShape
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, errValuesShape
		}
		v, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("the value of %s is not a string", printableKey(key))
		}
		if _, dup := values[key]; dup {
			return nil, fmt.Errorf("%s appears twice", printableKey(key))
		}
		if v == "" {
			return nil, fmt.Errorf("the value of %s is empty", printableKey(key))
		}
		values[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, errValuesShape
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return values, nil
}

// printableKey quotes a field key for a message when it looks like one
// (^[a-z0-9_]{1,40}$); anything else might be a value pasted into the key's
// seat, so it is not repeated.
func printableKey(key string) string {
	if len(key) == 0 || len(key) > 40 {
		return "a key"
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return "a key"
		}
	}
	return fmt.Sprintf("%q", key)
}

// checkValueKeys refuses a key that is not one of the declared field keys.
func checkValueKeys(values map[string]string, declared []string) error {
	known := map[string]bool{}
	for _, k := range declared {
		known[k] = true
	}
	for k := range values {
		if !known[k] {
			return fmt.Errorf("%s is not a declared field of the requirement", printableKey(k))
		}
	}
	return nil
}
