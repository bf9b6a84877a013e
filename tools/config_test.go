package tools

import (
	"os"
	"strings"
	"testing"
)

// TestMain keeps what the tests approve and the passkeys they issue out of the user's own
// configuration directory: each run gets a fresh one, which helper processes re-run from
// this binary inherit.
func TestMain(m *testing.M) {
	if !strings.Contains(os.Getenv("XDG_CONFIG_HOME"), "aipm-test-config") {
		dir, err := os.MkdirTemp("", "aipm-test-config-")
		if err != nil {
			panic(err)
		}
		os.Setenv("XDG_CONFIG_HOME", dir)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}
