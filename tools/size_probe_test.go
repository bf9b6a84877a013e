package tools

import (
	"fmt"
	"sort"
	"testing"
)

func TestProbeSizes(t *testing.T) {
	s, _ := newTestServer(t)
	var names []string
	for n := range s.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := s.tools[n].def
		fmt.Printf("## %s [%s] %q\n", n, s.tools[n].perm, d.Description)
		var ps []string
		for p := range d.InputSchema.Properties {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		for _, p := range ps {
			m := d.InputSchema.Properties[p].(map[string]any)
			fmt.Printf("   %s %v %q\n", p, m["type"], m["description"])
		}
	}
}
