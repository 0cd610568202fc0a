package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// snugd helper sim speaks the helper protocol on stdin/stdout: at end of
// input it exits 0; anything but a known helper is a usage error.
func TestHelperCommand(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
		code  int
		out   string
	}{
		{[]string{"helper"}, "", exitUsage, ""},
		{[]string{"helper", "whatsapp"}, "", exitUsage, ""},
		{[]string{"helper", "sim", "--codes=0"}, "", exitNo, ""},
		{[]string{"helper", "sim"}, "", exitOK, ""},
		{[]string{"helper", "sim"}, `{"jsonrpc":"2.0","id":1,"method":"link.poll","params":{}}` + "\n", exitOK, `"code":-32006`},
	} {
		var out, errb bytes.Buffer
		e := env{stdin: strings.NewReader(tc.stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		if code := dispatch(context.Background(), e, tc.args); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("snugd %s = %d, %q; want %d with %q", strings.Join(tc.args, " "), code, out.String(), tc.code, tc.out)
		}
	}
}
