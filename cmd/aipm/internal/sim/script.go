package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// simDirective is one line of the script.
type simDirective struct {
	verb string
	line string // the line as written, without "- "

	path, text string // write
	random     bool
	lo, hi     int64
	in, out    string // double
	dur        time.Duration
	agent      string // ask, shiritori
	question   string
	rounds     int
	first      string
	plan       simPlan
}

// simPlan is a manager's plan line.
type simPlan struct {
	localID string
	after   []string
	agent   string
	title   string
	steps   []string
}

var (
	simIDRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	simRandomRe = regexp.MustCompile(`^(?i:random)\s+(-?\d+)-(-?\d+)$`)
)

// simParseScript reads the directives of a text; other lines are prose.
func simParseScript(text string) []simDirective {
	var out []simDirective
	for _, line := range strings.Split(text, "\n") {
		if d, ok := simParseLine(line); ok {
			out = append(out, d)
		}
	}
	return out
}

// simSteps are the directives a worker performs.
func simSteps(ds []simDirective) []simDirective {
	var out []simDirective
	for _, d := range ds {
		if d.verb != "plan" {
			out = append(out, d)
		}
	}
	return out
}

// simParseLine reads one line; ok is false for prose, including a line whose arguments
// do not fit its verb.
func simParseLine(line string) (simDirective, bool) {
	line = strings.TrimSpace(line)
	line = strings.TrimSpace(strings.TrimPrefix(line, "- "))
	verb, rest, _ := strings.Cut(line, " ")
	d := simDirective{verb: strings.ToLower(verb), line: line}
	rest = strings.TrimSpace(rest)
	f := strings.Fields(rest)
	switch d.verb {
	case "write", "append":
		if len(f) < 2 {
			return d, false
		}
		d.path = f[0]
		d.text = strings.TrimSpace(strings.TrimPrefix(rest, f[0]))
		if m := simRandomRe.FindStringSubmatch(d.text); m != nil {
			lo, err1 := strconv.ParseInt(m[1], 10, 64)
			hi, err2 := strconv.ParseInt(m[2], 10, 64)
			if err1 != nil || err2 != nil || lo > hi || hi-lo < 0 || hi-lo > 1<<62 {
				return d, false
			}
			d.random, d.lo, d.hi = true, lo, hi
		}
		return d, true
	case "double":
		if len(f) != 2 {
			return d, false
		}
		d.in, d.out = f[0], f[1]
		return d, true
	case "sleep", "hang", "compute":
		if d.verb == "hang" && len(f) == 3 && strings.EqualFold(f[1], "once") {
			d.path, f = f[2], f[:1]
		}
		if len(f) != 1 {
			return d, false
		}
		dur, err := time.ParseDuration(f[0])
		if err != nil || dur < 0 {
			return d, false
		}
		d.dur = dur
		return d, true
	case "ask":
		if len(f) < 2 || !simIDRe.MatchString(f[0]) {
			return d, false
		}
		d.agent = f[0]
		d.question = strings.TrimSpace(strings.TrimPrefix(rest, f[0]))
		return d, true
	case "shiritori":
		if len(f) != 3 || !simIDRe.MatchString(f[0]) {
			return d, false
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			return d, false
		}
		d.agent, d.rounds, d.first = f[0], n, f[2]
		return d, true
	case "plan":
		p, ok := simParsePlan(rest)
		d.plan = p
		return d, ok
	}
	return d, false
}

// simParsePlan reads `<local-id> [after <id>[,<id>…]] [for <agent>]: <title> | <step>; …`.
func simParsePlan(rest string) (simPlan, bool) {
	var p simPlan
	head, tail, ok := strings.Cut(rest, ":")
	if !ok {
		return p, false
	}
	f := strings.Fields(head)
	if len(f) == 0 || !simIDRe.MatchString(strings.ToLower(f[0])) {
		return p, false
	}
	p.localID = f[0]
	for i := 1; i < len(f); i += 2 {
		if i+1 >= len(f) {
			return p, false
		}
		switch strings.ToLower(f[i]) {
		case "after":
			for _, id := range strings.Split(f[i+1], ",") {
				if id = strings.TrimSpace(id); id != "" {
					p.after = append(p.after, id)
				}
			}
		case "for":
			p.agent = f[i+1]
		default:
			return p, false
		}
	}
	title, steps, _ := strings.Cut(tail, "|")
	p.title = strings.TrimSpace(title)
	if p.title == "" {
		return p, false
	}
	for _, st := range strings.Split(steps, ";") {
		if st = strings.TrimSpace(st); st != "" {
			p.steps = append(p.steps, st)
		}
	}
	return p, true
}

// title is a short sub-task title for a step.
func (d simDirective) title() string {
	switch d.verb {
	case "write":
		return "Write " + d.path
	case "append":
		return "Append to " + d.path
	case "double":
		return "Double " + d.in + " into " + d.out
	case "sleep":
		return "Work for " + d.dur.String()
	case "hang":
		return "Hang for " + d.dur.String()
	case "compute":
		return "Compute for " + d.dur.String()
	case "ask":
		return "Ask " + d.agent
	case "shiritori":
		return "Play shiritori with " + d.agent
	}
	return simClip(d.line, 80)
}

// simStepError is a scripted step that cannot be done: it blocks the (sub-)task.
type simStepError struct{ msg string }

func (e *simStepError) Error() string { return e.msg }

func simStepErrorf(format string, args ...any) error {
	return &simStepError{msg: fmt.Sprintf(format, args...)}
}

// perform does the steps of a description, in order, and says what it did.
func (s *simAgent) perform(desc string) (string, error) {
	var did []string
	for _, d := range simSteps(simParseScript(desc)) {
		r, err := s.do(d)
		if err != nil {
			return "", err
		}
		did = append(did, r)
		s.did = append(s.did, r)
	}
	if len(did) == 0 {
		s.logf("nothing scripted to do")
		return "nothing scripted to do", nil
	}
	return strings.Join(did, "; "), nil
}

// do performs one step.
func (s *simAgent) do(d simDirective) (string, error) {
	switch d.verb {
	case "write":
		full, err := simSafePath(s.root, d.path)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		text := d.text
		if d.random {
			text = strconv.FormatInt(d.lo+rand.Int64N(d.hi-d.lo+1), 10)
		}
		if err := simWriteFile(full, text+"\n"); err != nil {
			return "", simStepErrorf("write %s: %v", d.path, err)
		}
		s.logf("wrote %s (%s)", d.path, simClip(text, 60))
		return "wrote " + d.path, nil
	case "append":
		full, err := simSafePath(s.root, d.path)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		old, err := os.ReadFile(full)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", simStepErrorf("append %s: %v", d.path, err)
		}
		if len(old) > 0 && old[len(old)-1] != '\n' {
			old = append(old, '\n')
		}
		if err := simWriteFile(full, string(old)+d.text+"\n"); err != nil {
			return "", simStepErrorf("append %s: %v", d.path, err)
		}
		s.logf("appended to %s (%s)", d.path, simClip(d.text, 60))
		return "appended to " + d.path, nil
	case "double":
		in, err := simSafePath(s.root, d.in)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		out, err := simSafePath(s.root, d.out)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		b, err := os.ReadFile(in)
		if err != nil {
			return "", simStepErrorf("double: cannot read %s: %v", d.in, errors.Unwrap(err))
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			return "", simStepErrorf("double: %s is empty", d.in)
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || v > 1<<62 || v < -(1<<62) {
			return "", simStepErrorf("double: %s does not start with an integer (%q)", d.in, simClip(fields[0], 40))
		}
		if err := simWriteFile(out, strconv.FormatInt(2*v, 10)+"\n"); err != nil {
			return "", simStepErrorf("double: write %s: %v", d.out, err)
		}
		s.logf("doubled %s (%d) into %s (%d)", d.in, v, d.out, 2*v)
		return fmt.Sprintf("doubled %s into %s", d.in, d.out), nil
	case "sleep":
		s.logf("working for %s", d.dur)
		if err := s.busy(d.dur); err != nil {
			return "", err
		}
		return "worked " + d.dur.String(), nil
	case "compute":
		s.logf("computing for %s without a tool call", d.dur)
		n := 0
		for end := time.Now().Add(d.dur); time.Now().Before(end); {
			n++
		}
		return fmt.Sprintf("computed %s (%d rounds)", d.dur, n), nil
	case "hang":
		if d.path != "" {
			full, err := simSafePath(s.root, d.path)
			if err != nil {
				return "", &simStepError{msg: err.Error()}
			}
			if _, err := os.Lstat(full); err == nil {
				s.logf("not hanging again: %s exists", d.path)
				return "did not hang again", nil
			}
			if err := simWriteFile(full, "hung once\n"); err != nil {
				return "", simStepErrorf("hang: write %s: %v", d.path, err)
			}
		}
		s.logf("hanging for %s without a tool call", d.dur)
		time.Sleep(d.dur)
		return "hung " + d.dur.String(), nil
	case "ask":
		r, err := s.delegate(d.agent, "ask: "+d.question)
		if err != nil {
			return "", err
		}
		s.logf("%s answered: %s", d.agent, r)
		return fmt.Sprintf("asked %s: %s", d.agent, r), nil
	case "shiritori":
		r, err := s.delegate(d.agent, d.line)
		if err != nil {
			return "", err
		}
		s.logf("shiritori with %s: %s", d.agent, r)
		return fmt.Sprintf("shiritori with %s: %s", d.agent, r), nil
	}
	return "", simStepErrorf("cannot do %q", d.line)
}

// busy spends d on "work", calling a cheap tool every simPollEvery so that an interrupt
// (returned by the call) stops it at once.
func (s *simAgent) busy(d time.Duration) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		time.Sleep(min(left, simPollEvery))
		if err := s.call("get_my_profile", nil, nil); err != nil {
			return err
		}
	}
}

// simSafePath resolves a script path against root, refusing what would leave it or touch
// the store: absolute paths, .. escapes, .ai-pm, and symlinks pointing outside.
func simSafePath(root, p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return "", fmt.Errorf("refusing path %q: it must stay inside the repository", p)
	}
	clean := filepath.Clean(p)
	first, _, _ := strings.Cut(filepath.ToSlash(clean), "/")
	if strings.EqualFold(first, filestore.DirName) {
		return "", fmt.Errorf("refusing path %q: %s belongs to aipm", p, filestore.DirName)
	}
	full := filepath.Join(root, clean)
	// A symlink on the way may point anywhere: check where the deepest existing part of
	// the path really is.
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	existing := full
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("refusing path %q: %v", p, err)
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", fmt.Errorf("refusing path %q: it leads outside the repository", p)
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); strings.EqualFold(first, filestore.DirName) {
		return "", fmt.Errorf("refusing path %q: it leads into %s", p, filestore.DirName)
	}
	return full, nil
}

func simWriteFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
