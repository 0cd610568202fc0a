//go:build linux

package linkdevice

import (
	"strconv"
	"testing"
)

// TestHelperRulesRefuseADataDirectoryInsideTheSystem: a data directory a
// helper could read through the system directories fails closed.
func TestHelperRulesRefuseADataDirectoryInsideTheSystem(t *testing.T) {
	for _, tc := range []struct {
		name, state, session string
		ok                   bool
	}{
		{"usual", "/var/lib/snugd/helpers", "/var/lib/snugd/helpers/sim/ab", true},
		{"inside /usr", "/usr/local/var/snugd/helpers", "/usr/local/var/snugd/helpers/sim/ab", false},
		{"the data directory is /usr", "/usr/helpers", "/usr/helpers/sim/ab", false},
		{"session outside the state directory", "/var/lib/snugd/helpers", "/var/lib/snugd/other", false},
		{"session escaping by dots", "/var/lib/snugd/helpers", "/var/lib/snugd/helpers/../secrets", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helperRules(confineArgs{state: tc.state, session: tc.session, exe: "/bin/true"})
			if (err == nil) != tc.ok {
				t.Errorf("helperRules(state %s, session %s) = %v, want ok %v", tc.state, tc.session, err, tc.ok)
			}
		})
	}
}

// TestParseStatParent: a process chooses its command name, parentheses,
// spaces and digits included; the parent id is still the one the kernel
// wrote.
func TestParseStatParent(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"1234 (sleep) S 42 1234 1234 0 -1", 42, true},
		{"1234 (a) S 1 (b) S 42 1 1) S 7 1234", 7, true},
		{"1234 (x) Z 99", 99, true},
		{"1234 (sleep S 42", 0, false},
		{"1234 (sleep) S", 0, false},
		{"1234 (sleep) S -5", 0, false},
		{"", 0, false},
	} {
		got, ok := parseStatParent(tc.stat)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStatParent(%q) = %d, %v, want %d, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseStatParent: whatever the command name, the parser never panics
// and reads the parent from after the last ')'.
func FuzzParseStatParent(f *testing.F) {
	f.Add("sleep", 42)
	f.Add("a) S 1 (b", 7)
	f.Add(") ) )", 0)
	f.Fuzz(func(t *testing.T, comm string, ppid int) {
		if ppid < 0 {
			return
		}
		stat := "1234 (" + comm + ") S " + strconv.Itoa(ppid) + " 1234 1234 0"
		got, ok := parseStatParent(stat)
		if !ok || got != ppid {
			t.Fatalf("parseStatParent(%q) = %d, %v, want %d", stat, got, ok, ppid)
		}
	})
}
