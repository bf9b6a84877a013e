package main

import (
	"strings"
	"testing"
)

// The demo's closing commands work as printed when aipm is on PATH; when it is not, the
// demo says how to put it there first.
func TestDemoInspectHint(t *testing.T) {
	on := inspectHint("/tmp/d", "tsk_8001", true)
	if on != "Inspect it: cd /tmp/d && aipm status && aipm task show tsk_8001 && aipm chat log worker-calc\n" {
		t.Errorf("with aipm on PATH: %q", on)
	}
	off := inspectHint("/tmp/d", "tsk_8001", false)
	if !strings.HasPrefix(off, "aipm is not on your PATH") || !strings.Contains(off, "go install ./cmd/aipm") ||
		!strings.Contains(off, "make build") || !strings.HasSuffix(off, on) {
		t.Errorf("without aipm on PATH: %q", off)
	}
}
