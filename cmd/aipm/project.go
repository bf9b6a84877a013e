package main

import (
	"fmt"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// cmdProject is `aipm project pause|resume`: the acting human stops or restarts the
// project. A pause interrupts every live session (their next tool call is replaced by the
// notice) and no session starts until it is resumed.
func (a *app) cmdProject(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: aipm project pause|resume")
	}
	var to string
	switch args[0] {
	case "pause":
		to = filestore.ProjectPaused
	case "resume":
		to = filestore.ProjectActive
	default:
		return fmt.Errorf("unknown project command %q (want pause or resume)", args[0])
	}
	fs := newFlags(a, "project "+args[0])
	if _, err := fs.parse(args[1:], 0, 0, ""); err != nil {
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
