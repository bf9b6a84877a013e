package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// settings.agent_commands arrive with `git clone` and `git pull`, so a stranger's commit can
// name any program. Like `direnv allow`, this machine runs a command only once it has
// approved its exact content: commands.json in the machine directory (machine_trust.go, outside
// the repository, so nothing committed approves anything) holds one entry per approved
// content, keyed by its hash. The content is the command's name, argument template and
// environment, and the program its first word resolves to here: its path and, when it is a
// file of the repository, a SHA-256 of the file. A change to any of them — a pulled edit of
// the command, or of the script it runs — gives a new hash, so it withdraws the approval.

// Program is what an agent command's first word resolves to on this machine.
type Program struct {
	// Path is the absolute path of the program, or "./<path>" for a file of the repository
	// (relative to the directory the command runs in), or the word itself when it is found
	// nowhere (Missing; then nothing runs).
	Path string `json:"path"`
	// SHA256 is the content hash of a program that is a file of the repository.
	SHA256  string `json:"sha256,omitempty"`
	Missing bool   `json:"missing,omitempty"`
	// Exec is the file to execute: the coordinator runs exactly the file it checked.
	Exec string `json:"-"`
}

// Same reports whether two resolutions name the same program.
func (p Program) Same(q Program) bool {
	return p.Path == q.Path && p.SHA256 == q.SHA256 && p.Missing == q.Missing
}

func (p Program) String() string {
	switch {
	case p.Missing:
		return p.Path + " (not found)"
	case p.SHA256 != "":
		return p.Path + " (a file of the repository, sha256 " + p.SHA256[:16] + "...)"
	}
	return p.Path
}

// ResolveProgram resolves argv0, a command's first word with its placeholders filled, as it
// would run in dir: a name with a slash from dir, a bare name on PATH (a relative PATH entry
// from dir). A program inside dir or the repository is a repository file: named relative
// to its tree and hashed, since a pull can change it.
func (s *Store) ResolveProgram(argv0, dir string) (Program, error) {
	var found string
	if strings.ContainsRune(argv0, '/') || strings.ContainsRune(argv0, filepath.Separator) {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if isExecutable(p) {
			found = p
		}
	} else if argv0 != "" {
		for _, d := range filepath.SplitList(os.Getenv("PATH")) {
			if d == "" {
				d = "."
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(dir, d)
			}
			if p := filepath.Join(d, argv0); isExecutable(p) {
				found = p
				break
			}
		}
	}
	if found == "" {
		return Program{Path: argv0, Missing: true}, nil
	}
	real, err := filepath.EvalSymlinks(found)
	if err != nil {
		return Program{}, err
	}
	for _, tree := range []string{dir, s.root} {
		t, err := filepath.EvalSymlinks(tree)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(t, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		sum, err := hashFile(real)
		if err != nil {
			return Program{}, err
		}
		return Program{Path: "./" + filepath.ToSlash(rel), SHA256: sum, Exec: real}, nil
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		return Program{}, err
	}
	return Program{Path: abs, Exec: abs}, nil
}

// CommandProgram resolves the program of an agent command run in dir, with {aipm} (the
// aipm executable) and {workdir} (dir) filled in its first word.
func (s *Store) CommandProgram(ac AgentCommand, aipm, dir string) (Program, error) {
	if len(ac.Command) == 0 {
		return Program{}, nil
	}
	argv0 := strings.NewReplacer("{aipm}", aipm, "{workdir}", dir).Replace(ac.Command[0])
	return s.ResolveProgram(argv0, dir)
}

func isExecutable(p string) bool {
	fi, err := engine.StatFollow(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func hashFile(p string) (string, error) {
	f, err := engine.OpenFollow(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ApprovedCommand is one approved agent command: its name in settings.agent_commands, the
// content that was approved and when.
type ApprovedCommand struct {
	Name       string            `json:"name"`
	Command    []string          `json:"command"`
	Env        map[string]string `json:"env,omitempty"`
	Program    Program           `json:"program"`
	ApprovedAt time.Time         `json:"approved_at"`
}

type trustFile struct {
	Approved map[string]ApprovedCommand `json:"approved"` // by CommandHash
}

func (s *Store) trustPath() (string, error) { return s.machinePath("commands.json") }

// CommandHash identifies the content of an agent command that runs: its name, program,
// arguments and environment (not its description), and what its program resolves to.
func CommandHash(name string, ac AgentCommand, prog Program) string {
	data, _ := json.Marshal(struct {
		Name    string            `json:"name"`
		Command []string          `json:"command"`
		Env     map[string]string `json:"env"` // encoding/json sorts map keys
		Program Program           `json:"program"`
	}{name, ac.Command, ac.Env, prog})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (s *Store) readTrust() (*trustFile, error) {
	var t trustFile
	path, err := s.trustPath()
	if err != nil {
		return nil, err
	}
	if err := s.readJSON(path, &t); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if t.Approved == nil {
		t.Approved = map[string]ApprovedCommand{}
	}
	return &t, nil
}

// CommandApproved reports whether this machine approved exactly this content of the
// command called name.
func (s *Store) CommandApproved(name string, ac AgentCommand, prog Program) (bool, error) {
	t, err := s.readTrust()
	if err != nil {
		return false, err
	}
	_, ok := t.Approved[CommandHash(name, ac, prog)]
	return ok, nil
}

// LastApproved returns the most recently approved content of the command called name, nil
// if it was never approved.
func (s *Store) LastApproved(name string) (*ApprovedCommand, error) {
	t, err := s.readTrust()
	if err != nil {
		return nil, err
	}
	var last *ApprovedCommand
	for _, a := range t.Approved {
		if a.Name == name && (last == nil || a.ApprovedAt.After(last.ApprovedAt)) {
			a := a
			last = &a
		}
	}
	return last, nil
}

// NowInstalled says, for a command this machine has not approved as it is, whether the
// only change since its last approval is that its program got installed (it was missing
// then): the user changed nothing, and the words should say so. It returns the phrase, or
// "" when something else changed.
func (s *Store) NowInstalled(name string, ac AgentCommand, prog Program) string {
	last, err := s.LastApproved(name)
	// A file of the repository that appeared (by a pull, say) is someone's change to
	// review as such: only a program installed on the machine is "now installed".
	if err != nil || last == nil || !last.Program.Missing || prog.Missing || prog.SHA256 != "" {
		return ""
	}
	if !slices.Equal(last.Command, ac.Command) || !maps.Equal(last.Env, ac.Env) {
		return ""
	}
	return fmt.Sprintf("%s was not installed when it was approved and is now, at %s", last.Program.Path, prog.Path)
}

// ApproveCommands records the given commands, as they are now and with the programs they
// resolve to from the repository root (aipm fills {aipm}), as approved on this machine. It
// returns the names that were not approved before, sorted.
func (s *Store) ApproveCommands(cmds map[string]AgentCommand, aipm string) ([]string, error) {
	var added []string
	err := s.locked(func() error {
		return s.approveLocked(cmds, aipm, &added)
	})
	sort.Strings(added)
	return added, err
}

func (s *Store) approveLocked(cmds map[string]AgentCommand, aipm string, added *[]string) error {
	t, err := s.readTrust()
	if err != nil {
		return err
	}
	now := s.Now()
	for name, ac := range cmds {
		prog, err := s.CommandProgram(ac, aipm, s.root)
		if err != nil {
			return err
		}
		h := CommandHash(name, ac, prog)
		if _, ok := t.Approved[h]; ok {
			continue
		}
		t.Approved[h] = ApprovedCommand{Name: name, Command: ac.Command, Env: ac.Env, Program: prog, ApprovedAt: now}
		*added = append(*added, name)
	}
	if len(*added) == 0 {
		return nil
	}
	path, err := s.trustPath()
	if err != nil {
		return err
	}
	return engine.WriteJSON(path, t, 0o600)
}

// Unapproved is an agent command that active AI agents use and this machine has not
// approved: `aipm run` starts nothing with it.
type Unapproved struct {
	Name   string   `json:"name"`   // the key in settings.agent_commands (an ai_type)
	Agents []string `json:"agents"` // the active AI agents that use it
}

// UnapprovedCommands lists the configured agent commands used by active AI agents that this
// machine has not approved (new, or changed since they were approved, their program
// included), by name, resolving each program as `aipm trust` does (in the repository, with
// aipm the aipm executable). An ai_type with no command is not listed (`aipm doctor`
// reports it).
func (s *Store) UnapprovedCommands(aipm string) ([]Unapproved, error) {
	p, err := s.Project()
	if err != nil {
		return nil, err
	}
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	users := map[string][]string{}
	for _, a := range agents {
		if a.Type != AgentAI || a.Status != AgentActive {
			continue
		}
		t := a.AIType
		if t == "" {
			t = "claude"
		}
		if _, ok := p.Settings.AgentCommands[t]; ok {
			users[t] = append(users[t], a.ID)
		}
	}
	var out []Unapproved
	for t, ids := range users {
		ac := p.Settings.AgentCommands[t]
		prog, err := s.CommandProgram(ac, aipm, s.Root())
		if err != nil {
			return nil, err
		}
		ok, err := s.CommandApproved(t, ac, prog)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, Unapproved{Name: t, Agents: ids})
		}
	}
	slices.SortFunc(out, func(a, b Unapproved) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
