package filestore

import (
	"regexp"
	"strings"
	"testing"
)

// validName and validEntityID accept exactly what these expressions match.
var (
	nameSpec   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	entitySpec = regexp.MustCompile(`^[a-z]{3}_[a-z0-9][a-z0-9._-]{0,62}$`)
)

func TestValidIDsAsTheirSpec(t *testing.T) {
	inputs := []string{"", "a", "0", "-", ".", "_", "a-", "a.b_c-d", "A", "aB", "a/b", "a b", "..", "a\x00",
		"tsk_", "tsk_a", "tsk_-a", "tsk_01jd2x0k8m3q7v5w9z1b4c6e8f", "TSK_a", "ts_a", "tsk-a", "tsk__a", "tskk_a",
		"é", "tsk_é", strings.Repeat("a", 63), strings.Repeat("a", 64), "tsk_" + strings.Repeat("a", 63), "tsk_" + strings.Repeat("a", 64)}
	// Every string of up to three characters over an alphabet with each class in it.
	alpha := "az09._-A/ é"
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		inputs = append(inputs, prefix, "tsk_"+prefix)
		if n == 0 {
			return
		}
		for _, r := range alpha {
			gen(prefix+string(r), n-1)
		}
	}
	gen("", 3)
	for _, in := range inputs {
		if got, want := validName(in), nameSpec.MatchString(in); got != want {
			t.Errorf("validName(%q) = %v, want %v", in, got, want)
		}
		if got, want := validEntityID(in), entitySpec.MatchString(in); got != want {
			t.Errorf("validEntityID(%q) = %v, want %v", in, got, want)
		}
	}
}
