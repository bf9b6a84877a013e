package gitstate

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// gitCmd is one git command: where it runs, what it reads, what it adds to the
// environment.
type gitCmd struct {
	dir   string
	env   []string
	stdin []byte
}

// run runs git and returns its trimmed standard output; a failure carries git's own
// message, which names what was wrong.
func (c gitCmd) run(args ...string) (string, error) {
	out, err := c.raw(args...)
	return strings.TrimSpace(string(out)), err
}

func (c gitCmd) raw(args ...string) ([]byte, error) {
	out, errb, err := c.run3(args...)
	if err != nil {
		if msg := strings.TrimSpace(string(errb)); msg != "" {
			return out, fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
		}
		return out, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

func (c gitCmd) run3(args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command("git", append([]string{"-C", c.dir}, args...)...)
	cmd.Env = append(cleanEnv(), c.env...)
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// ok runs git for its exit status only.
func (c gitCmd) ok(args ...string) bool {
	_, _, err := c.run3(args...)
	return err == nil
}

// cleanEnv is the environment without the variables that would point git at another
// repository or index (set when aipm runs inside a Git hook).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// object is one answer of `git cat-file --batch`.
type object struct {
	id   string
	ok   bool
	typ  string
	data []byte
}

// catFile runs `git cat-file <mode>` with one object name a line on its input.
func (c gitCmd) catFile(mode string, specs []string) ([]byte, error) {
	for _, s := range specs {
		if strings.ContainsAny(s, "\n") {
			return nil, fmt.Errorf("object name %q holds a newline", s)
		}
	}
	c.stdin = []byte(strings.Join(specs, "\n") + "\n")
	return c.raw("cat-file", mode)
}

// checked is one answer of `git cat-file --batch-check`: id "" for an object that is
// missing.
type checked struct {
	id, typ string
	size    int64
}

// catCheck answers `git cat-file --batch-check` for specs. Nothing of the objects is read.
func (c gitCmd) catCheck(specs []string) ([]checked, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out, err := c.catFile("--batch-check", specs)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(specs) {
		return nil, fmt.Errorf("git cat-file --batch-check: %d answers for %d objects", len(lines), len(specs))
	}
	answers := make([]checked, len(specs))
	for i, l := range lines {
		f := strings.Fields(l)
		answers[i].size = -1
		if len(f) == 3 {
			if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				answers[i] = checked{id: f[0], typ: f[1], size: n}
			}
		}
	}
	return answers, nil
}

// catSizes is each object's size in bytes (catCheck), -1 for one that is missing.
func (c gitCmd) catSizes(specs []string) ([]int64, error) {
	answers, err := c.catCheck(specs)
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(answers))
	for i, a := range answers {
		sizes[i] = a.size
	}
	return sizes, nil
}

// catBatch reads many objects ("<rev>:<path>", a commit id) with one git process.
func (c gitCmd) catBatch(specs []string) ([]object, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out, err := c.catFile("--batch", specs)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(out))
	objs := make([]object, 0, len(specs))
	for range specs {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file --batch: short output")
		}
		f := strings.Fields(head)
		if len(f) != 3 {
			objs = append(objs, object{}) // "<name> missing", "ambiguous"
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("git cat-file --batch: %q", head)
		}
		data := make([]byte, n+1)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("git cat-file --batch: short object")
		}
		objs = append(objs, object{id: f[0], ok: true, typ: f[1], data: data[:n]})
	}
	return objs, nil
}
