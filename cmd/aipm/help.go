package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// errHelpShown ends a command that printed its help because it was asked to: exit 0.
var errHelpShown = errors.New("help shown")

// usageError is a command line aipm cannot run: a wrong count of arguments, an unknown
// flag or command. It exits 2 and points at the command's help.
type usageError struct {
	msg  string // what was wrong
	path string // the command, for its help: "task add"
}

func (e *usageError) Error() string { return e.msg }

func (e *usageError) hint() string {
	if e.path == "" {
		return "run `aipm help` for the commands"
	}
	return fmt.Sprintf("run `aipm %s --help` for its usage", e.path)
}

func isHelpFlag(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

// findCommand is the command args[0] names among cmds, or a usage error saying what was
// meant when it names none.
func findCommand(path []string, cmds []*command, args []string) (*command, error) {
	for _, c := range cmds {
		if c.name == args[0] {
			return c, nil
		}
	}
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	where := "aipm"
	if len(path) > 0 {
		where = "aipm " + strings.Join(path, " ")
	}
	msg := fmt.Sprintf("unknown command %q for %s", args[0], where)
	if m := closest(args[0], names); len(m) > 0 {
		msg += "; did you mean " + orList(quoteAll(m)) + "?"
	} else {
		msg += " (want " + orList(names) + ")"
	}
	return nil, &usageError{msg: msg, path: strings.Join(path, " ")}
}

// help is `aipm help [COMMAND [SUB-COMMAND]]`.
func (a *app) help(args []string) int {
	cmds, path := commands(), []string(nil)
	for len(args) > 0 {
		c, err := findCommand(path, cmds, args)
		if err != nil {
			a.printErr(err)
			return 2
		}
		path = append(path, c.name)
		if c.run != nil {
			// A sub-command's help comes from its own flag set.
			a.stdout, a.stderr = cleanWriter{a.stdout}, cleanWriter{a.stderr}
			if err := c.run(a, []string{"--help"}); err != nil && !errors.Is(err, errHelpShown) {
				a.printErr(err)
				return 1
			}
			return 0
		}
		cmds, args = c.subs, args[1:]
	}
	a.usage(a.stdout, path, cmds)
	return 0
}

// usage prints the help of a group of commands: aipm itself (path nil) or aipm task.
func (a *app) usage(w io.Writer, path []string, cmds []*command) {
	name := strings.TrimSpace("aipm " + strings.Join(path, " "))
	if len(path) == 0 {
		fmt.Fprintln(w, "aipm coordinates a team of AI coding agents and their human owner in one Git repository.")
		fmt.Fprintln(w)
	} else if g := lookup(path); g != nil {
		fmt.Fprintf(w, "%s: %s\n\n", name, g.summary)
	}
	fmt.Fprintf(w, "usage: %s <command> [arguments]\n\nCommands:\n", name)
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	if len(path) == 0 {
		fmt.Fprintln(w, "Global flags, with every command:")
		fmt.Fprintln(w, "  --json     print JSON (errors too: {\"error\": {...}} on standard error)")
		fmt.Fprintln(w, "  --as ID    the acting human (default $AIPM_USER, else this clone's human: `aipm whoami`)")
		fmt.Fprintln(w, "  --version  print aipm's version")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Ids: a task or agent id may be shortened to any unique prefix (tsk_8001, or 8001).")
		fmt.Fprintln(w)
	}
	if g := lookup(path); g != nil && len(g.examples) > 0 {
		printExamples(w, g.examples)
	}
	fmt.Fprintf(w, "Run `aipm help %s<command>` (or `%s <command> --help`) for a command's usage.\n",
		strings.Join(append(path, ""), " "), name)
}

// lookup is the command at path, or nil.
func lookup(path []string) *command {
	cmds := commands()
	var c *command
	for _, name := range path {
		c = nil
		for _, x := range cmds {
			if x.name == name {
				c = x
			}
		}
		if c == nil {
			return nil
		}
		cmds = c.subs
	}
	return c
}

func printExamples(w io.Writer, examples []string) {
	fmt.Fprintln(w, "Examples:")
	for _, e := range examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintln(w)
}

// flags is a sub-command's flag set with the global flags, parsed with flags and
// positional arguments in any order.
type flags struct {
	*flag.FlagSet
	a    *app
	path string // "task add"
	json bool
	as   string
}

func newFlags(a *app, path string) *flags {
	fs := &flags{FlagSet: flag.NewFlagSet("aipm "+path, flag.ContinueOnError), a: a, path: path}
	fs.SetOutput(io.Discard) // parse reports errors and help itself
	fs.Usage = func() {}
	fs.BoolVar(&fs.json, "json", false, "print JSON")
	fs.StringVar(&fs.as, "as", "", "the acting human's agent `ID` (default $AIPM_USER, else this clone's human: `aipm whoami`)")
	return fs
}

// parse parses args allowing flags after positional arguments, and checks the count of
// positional arguments is within [min, max] (max < 0: unbounded). usage is the command's
// arguments for its usage line. -h and --help print the command's help.
func (fs *flags) parse(args []string, min, max int, usage string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp(fs.a.stdout, usage)
				return nil, errHelpShown
			}
			return nil, &usageError{msg: fs.explain(err), path: fs.path}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		what := "too many arguments"
		if len(pos) < min {
			what = "missing arguments"
		}
		return nil, &usageError{msg: fmt.Sprintf("%s\nusage: aipm %s %s", what, fs.path, usage), path: fs.path}
	}
	return pos, nil
}

// explain words a flag parse error, with the flag meant when one was mistyped.
func (fs *flags) explain(err error) string {
	msg := err.Error()
	const undefined = "flag provided but not defined: -"
	if rest, ok := strings.CutPrefix(msg, undefined); ok {
		name := strings.TrimPrefix(rest, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = fmt.Sprintf("unknown flag --%s for aipm %s", name, fs.path)
		if m := closest(name, names); len(m) > 0 {
			for i := range m {
				m[i] = "--" + m[i]
			}
			msg += "; did you mean " + orList(m) + "?"
		}
	}
	return msg
}

// printHelp prints a sub-command's help: usage, summary, flags with one line each, the
// global flags and the examples.
func (fs *flags) printHelp(w io.Writer, usage string) {
	c := lookup(strings.Fields(fs.path))
	fmt.Fprintf(w, "usage: aipm %s %s\n", fs.path, usage)
	if c != nil {
		fmt.Fprintf(w, "\n%s\n", strings.ToUpper(c.summary[:1])+c.summary[1:]+".")
	}
	type row struct{ left, text string }
	var own, global []row
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if isBool(f) {
			arg = ""
		} else {
			arg = placeholder(f.Name, arg)
			left += " " + arg
		}
		if d := f.DefValue; d != "" && !isBool(f) && d != "0" && d != "0s" && d != "[]" {
			text += fmt.Sprintf(" (default %s)", d)
		}
		if f.Name == "json" || f.Name == "as" {
			global = append(global, row{left, text})
		} else {
			own = append(own, row{left, text})
		}
	})
	global = append(global, row{"-h, --help", "show this help"})
	width := 0
	for _, r := range append(append([]row{}, own...), global...) {
		width = max(width, len(r.left))
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, r := range own {
			fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.text)
		}
	}
	fmt.Fprintln(w, "\nGlobal flags:")
	for _, r := range global {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.text)
	}
	fmt.Fprintln(w)
	if c != nil && len(c.examples) > 0 {
		printExamples(w, c.examples)
	}
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// placeholder is the word shown for a flag's value: the back-quoted word of its usage
// text, else one from its type.
func placeholder(name, arg string) string {
	switch arg {
	case "string", "value":
		return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	case "int":
		return "N"
	case "duration":
		return "DURATION"
	}
	return arg
}

// closest are the candidates nearest to s: those it is a prefix of, else those within two
// edits (at most three, nearest first).
func closest(s string, candidates []string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, s) && s != "" {
			out = append(out, c)
		}
	}
	if len(out) > 0 && len(out) <= 3 {
		return out
	}
	out = out[:0]
	type scored struct {
		c string
		d int
	}
	var near []scored
	for _, c := range candidates {
		if d := editDistance(s, c); d <= 2 && d < len(c) {
			near = append(near, scored{c, d})
		}
	}
	sort.SliceStable(near, func(i, j int) bool { return near[i].d < near[j].d })
	for i := 0; i < len(near) && i < 3; i++ {
		out = append(out, near[i].c)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, counting an adjacent swap as one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// printErr prints an error for a human: the message, then a hint naming the command line
// (the store's hints are written for agents and name MCP tools).
func (a *app) printErr(err error) {
	_, msg, hint := describeErr(err)
	fmt.Fprintf(a.stderr, "aipm: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(a.stderr, "hint: %s\n", hint)
	}
}

// printJSONErr prints an error as JSON, for --json: on standard error, where every error
// goes (SPEC §9), so a script reads results from standard output and errors from standard
// error, each as JSON.
func (a *app) printJSONErr(err error) {
	code, msg, hint := describeErr(err)
	e := map[string]string{"code": code, "message": msg}
	if hint != "" {
		e["hint"] = hint
	}
	enc := json.NewEncoder(a.stderr)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(map[string]any{"error": e})
}

func describeErr(err error) (code, msg, hint string) {
	var fe *filestore.Error
	var ue *usageError
	var ae *ambiguousError
	switch {
	case errors.As(err, &ae):
		return "ambiguous_id", ae.Error(), ae.hint()
	case errors.As(err, &fe):
		return fe.Code, fe.Message, cliHint(fe.Hint)
	case errors.As(err, &ue):
		return "usage", ue.msg, ue.hint()
	}
	return "error", err.Error(), ""
}

// toolToCLI maps the MCP tools the store's hints name to the commands a human types.
var toolToCLI = []struct{ tool, cli string }{
	{"list_tasks", "`aipm task list`"},
	{"get_task", "`aipm task show ID`"},
	{"get_my_tasks", "`aipm task list --assignee ID`"},
	{"update_task_status", "`aipm task status ID STATUS`"},
	{"assign_task", "`aipm task assign ID AGENT`"},
	{"create_task", "`aipm task add`"},
	{"approve_task_request", "`aipm task approve ID`"},
	{"reject_task_request", "`aipm task reject ID`"},
	{"list_subordinates", "`aipm agent list`"},
	{"get_subordinate_profile", "`aipm agent show ID`"},
	{"send_message", "`aipm chat send`"},
	{"get_pending_messages", "`aipm chat log`"},
}

// cliHint rewrites a hint written for agents so that it names commands instead of tools.
func cliHint(hint string) string {
	for _, m := range toolToCLI {
		hint = replaceWord(hint, m.tool, m.cli)
	}
	return hint
}

// replaceWord replaces whole-word occurrences of old (not parts of longer identifiers).
func replaceWord(s, old, repl string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		word := (i == 0 || !isIdent(s[i-1])) && (end == len(s) || !isIdent(s[end]))
		b.WriteString(s[:i])
		if word {
			b.WriteString(repl)
		} else {
			b.WriteString(old)
		}
		s = s[end:]
	}
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// jsonRequested reports whether the command line asks for JSON (--json anywhere before a
// lone --).
func jsonRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
}

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the build's
// module version and VCS stamp tell.
var version = ""

func (a *app) cmdVersion(args []string) error {
	fs := newFlags(a, "version")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	v, rev, when, dirty := version, "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if fs.json {
		return a.printJSON(map[string]any{"version": v, "revision": rev, "time": when, "modified": dirty})
	}
	line := "aipm version " + v
	if rev != "" {
		line += " (" + rev[:min(12, len(rev))]
		if when != "" {
			line += ", " + when
		}
		if dirty {
			line += ", modified"
		}
		line += ")"
	}
	a.printf("%s\n", line)
	return nil
}
