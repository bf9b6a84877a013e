package main

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite golden sections of testdata/scripts/*.txtar")

// TestMain makes the test binary a multi-call binary: scripts `exec aipm ...` run the real
// command in a subprocess, and the `mcp` command drives real `aipm mcp` servers.
//
// The test run gets its own user configuration directory (where aipm keeps approvals and
// passkeys), which the processes it starts inherit; each script gets another.
func TestMain(m *testing.M) {
	if !strings.Contains(os.Getenv("XDG_CONFIG_HOME"), "aipm-test-config") {
		dir, err := os.MkdirTemp("", "aipm-test-config-")
		if err != nil {
			panic(err)
		}
		os.Setenv("XDG_CONFIG_HOME", dir)
		testscript.Main(cleanupM{m, dir}, map[string]func(){"aipm": aipmTestMain, noopMCPCommand: noopMCPMain, maxRSSCommand: maxRSSMain})
		return
	}
	testscript.Main(m, map[string]func(){"aipm": aipmTestMain, noopMCPCommand: noopMCPMain, maxRSSCommand: maxRSSMain})
}

// cleanupM removes a directory once the tests ran (testscript.Main exits right after).
type cleanupM struct {
	m   *testing.M
	dir string
}

func (c cleanupM) Run() int {
	defer os.RemoveAll(c.dir)
	return c.m.Run()
}

// aipmTestMain is main with the test clock: AIPM_TEST_CLOCK=<RFC 3339 time> freezes the
// clock so that outputs are stable. Production code never reads this variable.
func aipmTestMain() {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	if v := os.Getenv("AIPM_TEST_CLOCK"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			os.Stderr.WriteString("AIPM_TEST_CLOCK: " + err.Error() + "\n")
			os.Exit(2)
		}
		a.now = func() time.Time { return t }
	}
	os.Exit(a.run(os.Args[1:]))
}

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("../../testdata/scripts"))
}

// TestAgentCLIs runs the scenarios with the real agent CLIs (testdata/e2e, make
// agentclis): after TestScripts, not beside it, so that their Node.js and native
// processes do not load the machine while the timing-sensitive scenarios run.
func TestAgentCLIs(t *testing.T) {
	testscript.Run(t, scriptParams("../../testdata/e2e"))
}

func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("AIPM_USER", "")
			// This machine's approvals and passkeys, outside the scripts' work tree.
			cfg, err := os.MkdirTemp("", "aipm-test-config-")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(cfg) })
			env.Setenv("XDG_CONFIG_HOME", cfg)
			// Where the real agent CLIs are (make agentclis); the testdata/e2e scripts put
			// it on their PATH.
			env.Setenv("AGENTCLIS", agentCLIDir())
			// How many rounds sync_race runs (3 unless asked for more).
			env.Setenv("AIPM_RACE_RUNS", os.Getenv("AIPM_RACE_RUNS"))
			setupModel(env)
			return setupMCP(env)
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" { // can make files that belong to another user
				return os.Getuid() == 0, nil
			}
			return agentCLICondition(cond)
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"mcp":       cmdMCP,
			"model":     cmdModel,
			"stdoutvar": cmdStdoutVar,
		},
	}
}

// cmdStdoutVar sets an environment variable to the previous command's stdout, trimmed:
// `exec aipm task add 'x'` then `stdoutvar TASK` names the new task in later lines.
func cmdStdoutVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdoutvar VAR")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

func TestGlobalFlagsLast(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"--json", "task", "show", "T"}, []string{"task", "show", "T", "--json"}},
		{[]string{"--as", "bob", "-json", "status"}, []string{"status", "--as", "bob", "-json"}},
		{[]string{"--as=bob", "task", "list"}, []string{"task", "list", "--as=bob"}},
		{[]string{"task", "show", "--json", "T"}, []string{"task", "show", "--json", "T"}},
		{[]string{"--json"}, []string{}},
		{nil, nil},
	}
	for _, c := range cases {
		if got := globalFlagsLast(c.in); !slices.Equal(got, c.want) {
			t.Errorf("globalFlagsLast(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
