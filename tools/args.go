package tools

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxArgChars bounds every string argument: nothing an agent legitimately sends is longer,
// and a hostile megabyte string is refused before it reaches the store.
const maxArgChars = 100_000

func badArg(name, format string, args ...any) *toolError {
	return &toolError{Code: "invalid_argument", Message: fmt.Sprintf("argument %q: ", name) + fmt.Sprintf(format, args...),
		Hint: "call help with tool_name to see this tool's parameters"}
}

// optString returns a string argument, "" when absent or null.
func (c *call) optString(name string) (string, error) {
	v, ok := c.args[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badArg(name, "must be a string, got %s", jsonType(v))
	}
	if utf8.RuneCountInString(s) > maxArgChars {
		return "", badArg(name, "too long (%d characters, at most %d)", utf8.RuneCountInString(s), maxArgChars)
	}
	return s, nil
}

// reqString returns a required, non-empty string argument.
func (c *call) reqString(name string) (string, error) {
	s, err := c.optString(name)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", badArg(name, "is required")
	}
	return s, nil
}

// optInt returns an integer argument, def when absent.
func (c *call) optInt(name string, def int) (int, error) {
	v, ok := c.args[name]
	if !ok || v == nil {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, badArg(name, "must be an integer, got %s", jsonType(v))
	}
	return int(f), nil
}

// optBool returns a boolean argument, def when absent.
func (c *call) optBool(name string, def bool) (bool, error) {
	v, ok := c.args[name]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, badArg(name, "must be true or false, got %s", jsonType(v))
	}
	return b, nil
}

func jsonType(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case float64:
		if v == math.Trunc(v) {
			return "the number " + fmt.Sprint(v)
		}
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// unknownArgs refuses an argument the tool's schema does not name: dropped silently, it
// would leave the agent believing it had said something (a blocked_reason given to a tool
// that takes reason). The error names the argument and the ones the tool takes.
func unknownArgs(t *tool, args map[string]any) error {
	var bad []string
	for name := range args {
		if _, ok := t.def.InputSchema.Properties[name]; !ok {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	known := make([]string, 0, len(t.def.InputSchema.Properties))
	for name := range t.def.InputSchema.Properties {
		known = append(known, name)
	}
	sort.Strings(known)
	quoted := make([]string, len(bad))
	for i, b := range bad {
		quoted[i] = strconv.Quote(clipArg(b))
	}
	return &toolError{Code: "invalid_argument",
		Message: fmt.Sprintf("%s takes no argument %s; its arguments are %s", t.def.Name, strings.Join(quoted, ", "), strings.Join(known, ", ")),
		Hint:    "call again without it, under the names this tool takes (help with tool_name shows them)"}
}

// clipArg shortens an argument name for an error message.
func clipArg(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:40]) + "…"
}
