package land

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// git is the git command run in one directory, with variables added to its environment.
type git struct {
	dir string
	env []string
}

// run runs git and returns its trimmed standard output; a failure carries git's own
// message.
func (g git) run(args ...string) (string, error) {
	out, errb, err := g.run3(args...)
	if err != nil {
		msg := strings.TrimSpace(errb)
		if msg == "" {
			msg = strings.TrimSpace(out)
		}
		if msg != "" {
			return out, fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
		}
		return out, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out), nil
}

func (g git) run3(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command("git", append([]string{"-C", g.dir}, args...)...)
	cmd.Env = append(cleanEnv(), g.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// ok runs git for its exit status only.
func (g git) ok(args ...string) bool {
	_, _, err := g.run3(args...)
	return err == nil
}

// lines runs git and splits its output into non-empty lines.
func (g git) lines(args ...string) ([]string, error) {
	out, err := g.run(args...)
	if err != nil {
		return nil, err
	}
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls, nil
}

// cleanEnv is the environment without the variables that would point git at another
// repository or index (set when aipm runs inside a Git hook), and without aipm's own.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX":
			continue
		}
		if strings.HasPrefix(k, "AIPM_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// notState are the pathspecs that keep a store out of a code commit: .ai-pm at the top
// and at any depth.
var notState = []string{":(exclude).ai-pm", ":(exclude,glob)**/.ai-pm/**"}
