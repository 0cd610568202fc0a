package wire

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type corpusCase struct {
	verdict string // accept or reject; "prose" for prose-only cases
	schema  string // the frame type, without "snug:"
	name    string
	rule    string // prose-only cases: the rule the schema cannot carry
	frame   []byte
}

var repeatMacro = regexp.MustCompile(`<<([^*>]+)\*(\d+)>>`)

// expand replaces each <<TEXT*N>> with TEXT repeated N times.
func expand(t *testing.T, s string) []byte {
	t.Helper()
	return []byte(repeatMacro.ReplaceAllStringFunc(s, func(m string) string {
		sub := repeatMacro.FindStringSubmatch(m)
		n, err := strconv.Atoi(sub[2])
		if err != nil {
			t.Fatalf("bad macro %q", m)
		}
		return strings.Repeat(sub[1], n)
	}))
}

func readCorpus(t *testing.T, path string, prose bool) []corpusCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 4)
		if len(fields) != 4 {
			t.Fatalf("%s: malformed line %q", path, line)
		}
		c := corpusCase{frame: expand(t, fields[3])}
		if prose {
			c.verdict, c.schema, c.name, c.rule = "prose", fields[0], fields[1], fields[2]
		} else {
			c.verdict, c.schema, c.name = fields[0], fields[1], fields[2]
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// compileSchemas compiles every published schema.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	urls := map[string]string{}
	for _, typ := range SchemaTypes() {
		b, ok := Schema(typ)
		if !ok {
			t.Fatalf("Schema(%q) = false, want a schema", typ)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("schema %s: %v", typ, err)
		}
		url := "urn:snug:wire:v1:" + strings.TrimPrefix(typ, typePrefix)
		if id := doc.(map[string]any)["$id"]; id != url {
			t.Errorf("schema %s: $id = %v, want %s", typ, id, url)
		}
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		urls[typ] = url
	}
	out := map[string]*jsonschema.Schema{}
	for typ, url := range urls {
		s, err := c.Compile(url)
		if err != nil {
			t.Fatalf("compile %s: %v", typ, err)
		}
		out[strings.TrimPrefix(typ, typePrefix)] = s
	}
	return out
}

// TestSchemasAgreeWithParsers runs the checked-in corpus through the
// published schemas, and its net-requests through ParseNetRequest too.
// Where a schema can carry a rule, the schema (and for a net-request the
// parser) says what the corpus says; the rules carried by prose alone
// (testdata/corpus/prose-only.txt: body on GET/HEAD, STRIP headers,
// userinfo, …) pass the schema, and ParseNetRequest rejects the
// net-requests that break them.
//
// conformance: P1-F2-02, P1-R2-02
func TestSchemasAgreeWithParsers(t *testing.T) {
	schemas := compileSchemas(t)
	cases := append(readCorpus(t, "testdata/corpus/agree.txt", false), readCorpus(t, "testdata/corpus/prose-only.txt", true)...)
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.verdict+"/"+c.schema+"/"+c.name, func(t *testing.T) {
			s, ok := schemas[c.schema]
			if !ok {
				t.Fatalf("no schema %q", c.schema)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.frame))
			if err != nil {
				t.Fatalf("corpus frame is not JSON: %v", err)
			}
			schemaOK := s.Validate(inst) == nil
			var goErr error
			parsed := typePrefix+c.schema == TypeNetRequest
			if parsed {
				_, goErr = ParseNetRequest(c.frame)
			}
			goOK := goErr == nil
			switch c.verdict {
			case "accept", "reject":
				want := c.verdict == "accept"
				if schemaOK != want || (parsed && goOK != want) {
					t.Errorf("%s: Go accepts = %t (%v), schema accepts = %t, want both %t", c.name, goOK, goErr, schemaOK, want)
				}
			case "prose":
				if !schemaOK || (parsed && goOK) {
					t.Errorf("%s (%s): Go accepts = %t, schema accepts = %t, want Go false and schema true", c.name, c.rule, goOK, schemaOK)
				}
			default:
				t.Fatalf("bad verdict %q", c.verdict)
			}
		})
		if c.verdict == "accept" {
			covered[c.schema] = true
		}
	}
	for _, typ := range FrameTypes() {
		if !covered[strings.TrimPrefix(typ, typePrefix)] {
			t.Errorf("corpus has no accepted %s frame", typ)
		}
	}
}

// TestSchemaLookup checks the exported schema data.
//
// conformance: P1-F2-01
func TestSchemaLookup(t *testing.T) {
	if got := len(SchemaTypes()); got != 13 {
		t.Errorf("len(SchemaTypes()) = %d, want 13", got)
	}
	for _, typ := range SchemaTypes() {
		b, ok := Schema(typ)
		if !ok || !bytes.Contains(b, []byte(`"const": "`+typ+`"`)) {
			t.Errorf("Schema(%q) = %.40q, %t, want the schema of %s", typ, b, ok, typ)
		}
		short, ok := Schema(strings.TrimPrefix(typ, typePrefix))
		if !ok || !bytes.Equal(short, b) {
			t.Errorf("Schema(%q) differs from Schema(%q)", strings.TrimPrefix(typ, typePrefix), typ)
		}
	}
	for _, bad := range []string{"", "snug:", "snug:future", "../doc", "snug:net-request/..", "net-request.json"} {
		if b, ok := Schema(bad); ok {
			t.Errorf("Schema(%q) = %.40q, true, want false", bad, b)
		}
	}
	b, _ := Schema(TypeNetRequest)
	b[0] = 'X'
	if again, _ := Schema(TypeNetRequest); again[0] == 'X' {
		t.Error("Schema returned shared bytes; want the caller's own copy")
	}
}
