package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCtlReset: reset refuses while snugd runs and changes nothing; on a
// stopped daemon it says what is lost and changes nothing without --yes;
// with --yes it sets the database and the key aside; and it never prints
// a credential.
func TestCtlReset(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	values := `{"api_key":"` + cbKey + `","api_secret":"` + cbSecret() + `","passphrase":"` + cbPassphrase + `"}`
	if code, _, errOut := td.ctl(t, values, "credentials", "set", "trader", "coinbase-exchange"); code != exitOK {
		t.Fatalf("credentials set: %q", errOut)
	}
	before := dirNames(t, td.dir)
	code, out, errOut := td.ctl(t, "", "reset", "--yes")
	if code != exitNo || !strings.Contains(errOut, "snugd is running") || !strings.Contains(errOut, "nothing was changed") {
		t.Errorf("reset --yes while snugd runs = %d, %q, %q", code, out, errOut)
	}
	if after := dirNames(t, td.dir); !slices.Equal(before, after) {
		t.Errorf("a refused reset changed the data directory: %v, then %v", before, after)
	}

	td.stop()
	before = dirNames(t, td.dir)
	code, out, _ = td.ctl(t, "", "reset")
	for _, want := range []string{"would set aside", "snugd.db", "secrets.key", "1 connection:", "4 stored credential values", "nothing was changed", "snugd ctl reset --yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("reset without --yes does not say %q:\n%s", want, out)
		}
	}
	if code != exitNo {
		t.Errorf("reset without --yes = %d, want %d", code, exitNo)
	}
	if after := dirNames(t, td.dir); !slices.Equal(before, after) {
		t.Errorf("reset without --yes changed the data directory: %v, then %v", before, after)
	}

	code, out, errOut = td.ctl(t, "", "reset", "--yes", "--json")
	var rep resetJSON
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || !rep.Done || rep.Credentials != 4 || rep.Aside == "" {
		t.Fatalf("reset --yes --json = %d, %q, %q", code, out, errOut)
	}
	for _, secret := range []string{cbKey, cbSecret(), cbPassphrase} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("reset prints a credential")
		}
	}
	for _, name := range []string{dbFileName, secretsKeyName} {
		if _, err := os.Stat(filepath.Join(td.dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still in the data directory after reset --yes: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(rep.Aside, name)); err != nil {
			t.Errorf("%s was not set aside: %v", name, err)
		}
	}
	code, out, _ = td.ctl(t, "", "reset", "--yes")
	if code != exitOK || !strings.Contains(out, "nothing to reset") {
		t.Errorf("reset of an empty data directory = %d, %q", code, out)
	}
}
