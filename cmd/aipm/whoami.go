package main

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// cmdWhoami says who the command line acts as in this clone, and on which machine; --set
// changes the clone's human.
func (a *app) cmdWhoami(args []string) error {
	fs := newFlags(a, "whoami")
	set := fs.String("set", "", "make the human agent `ID` this clone's human")
	if _, err := fs.parse(args, 0, 0, "[--set ID]"); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	who, err := s.Identity()
	if err != nil {
		return err
	}
	if *set != "" {
		if who, err = s.SetIdentity(*set, "aipm whoami --set"); err != nil {
			return err
		}
	}
	machine, err := s.MachineID()
	if err != nil {
		return err
	}
	acting, actErr := a.actor(s, fs.as)
	if fs.json {
		out := struct {
			Identity *filestore.Identity `json:"identity"`
			Acting   string              `json:"acting"`
			Machine  string              `json:"machine"`
		}{who, acting.ID, machine}
		return a.printJSON(out)
	}
	a.printf("%s\n", describeIdentity(who))
	if actErr != nil {
		a.printf("the command line acts for nobody here until you do: %v\n", actErr)
	} else if who == nil || acting.ID != who.Human {
		a.printf("acting now as %s (%s)\n", acting.ID, actingSource(a, fs.as, who))
	}
	a.printf("this machine: %s\n", machine)
	return nil
}

func actingSource(a *app, as string, who *filestore.Identity) string {
	switch {
	case as != "":
		return "--as"
	case a.getenv("AIPM_USER") != "":
		return "AIPM_USER"
	case who == nil:
		return "the project owner: this clone has no human of its own; `aipm whoami --set ID` gives it one"
	}
	return "this clone's human"
}

// describeIdentity says in one line who works in this clone.
func describeIdentity(who *filestore.Identity) string {
	switch {
	case who == nil:
		return "this clone has no human of its own: the command line acts as the project owner (`aipm whoami --set ID` changes that)"
	case who.Human == "":
		return fmt.Sprintf("who works here? %s: `aipm whoami --set ID` (or --as ID on each command)", who.From)
	}
	return fmt.Sprintf("you are %s here (%s); `aipm whoami --set ID` changes it", who.Human, who.From)
}

// cloneIdentity settles who works in a clone being prepared: a human already set stays
// (unless --as names another); else --as, AIPM_USER, or the human the git identity
// matches. When none does, it records that nobody is set, and the command line asks.
func (a *app) cloneIdentity(s *filestore.Store, as string) (*filestore.Identity, error) {
	who, err := s.Identity()
	if err != nil {
		return nil, err
	}
	if who != nil && who.Human != "" && as == "" {
		return who, nil
	}
	if as != "" {
		return s.SetIdentity(as, "aipm init --as")
	}
	if u := a.getenv("AIPM_USER"); u != "" {
		return s.SetIdentity(u, "AIPM_USER")
	}
	ident := gitIdent(s.Root())
	if ident != "" {
		h, err := s.MatchHuman(ident)
		if err != nil {
			return nil, err
		}
		if h != "" {
			return s.SetIdentity(h, "git identity "+ident)
		}
	}
	var humans []string
	if agents, err := s.Agents(); err == nil {
		for _, ag := range agents {
			if ag.Type == filestore.AgentHuman && ag.Status != filestore.AgentInactive {
				humans = append(humans, ag.ID)
			}
		}
	}
	why := "no git identity is set"
	if ident != "" {
		why = "no human of the project matches the git identity " + ident
	}
	return s.SetIdentity("", fmt.Sprintf("%s (humans: %s)", why, strings.Join(humans, ", ")))
}

// gitIdent is the git author identity of dir ("Name <email>"), "" if git has none.
func gitIdent(dir string) string {
	out, err := exec.Command("git", "-C", dir, "var", "GIT_AUTHOR_IDENT").Output()
	if err != nil {
		return ""
	}
	l := strings.TrimSpace(string(out))
	if i := strings.LastIndex(l, ">"); i >= 0 {
		l = l[:i+1]
	}
	return l
}
