package main

import (
	"io"
	"unicode/utf8"
)

// cleanWriter drops control characters, other than newline and tab, from what the CLI
// prints. Titles, messages and names come from files that a clone may have brought in, and
// an escape sequence in them must not reach the terminal.
type cleanWriter struct{ w io.Writer }

func (c cleanWriter) Write(p []byte) (int, error) {
	clean := true
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if isControl(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return c.w.Write(p)
	}
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if !isControl(r) {
			out = append(out, p[i:i+n]...)
		}
		i += n
	}
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0)
}
