package oauth_test

import (
	"log/slog"
	"os"
	"testing"
)

// TestMain silences the example OP, which logs every request through the
// default slog logger (exampleop.SetupServer's request middleware).
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}
