package main

import (
	"strings"

	"github.com/aipm/aipm/filestore"
)

// projectPause and projectResume are `aipm project pause|resume`: the acting human stops
// or restarts the project. A pause interrupts every live session (their next tool call is
// replaced by the notice) and no session starts until it is resumed.
func (a *app) projectPause(args []string) error {
	return a.setProjectStatus("pause", filestore.ProjectPaused, args)
}

func (a *app) projectResume(args []string) error {
	return a.setProjectStatus("resume", filestore.ProjectActive, args)
}

func (a *app) setProjectStatus(verb, to string, args []string) error {
	fs := newFlags(a, "project "+verb)
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	ch, err := s.SetProjectStatus(actor, to)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(ch)
	}
	if ch.Previous == ch.Project.Status {
		a.printf("project %s is already %s\n", ch.Project.Name, ch.Project.Status)
		return nil
	}
	a.printf("project %s: %s → %s\n", ch.Project.Name, ch.Previous, ch.Project.Status)
	if len(ch.Notified) > 0 {
		a.printf("told: %s\n", strings.Join(ch.Notified, ", "))
	}
	return nil
}
