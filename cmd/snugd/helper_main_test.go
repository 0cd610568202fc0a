package main

import (
	"os"
	"testing"
)

// simHelperEnv makes this test binary snugd itself (main), so a
// supervisor in a test can run it as "snugd helper sim".
const simHelperEnv = "SNUGD_CMD_TEST_AS_SNUGD"

func TestMain(m *testing.M) {
	if os.Getenv(simHelperEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
