package main

import (
	"os"
	"os/user"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/filestore"
)

func (a *app) cmdInit(args []string) error {
	fs := newFlags(a, "init")
	name := fs.String("name", "", "project name (default: the directory name)")
	desc := fs.String("description", "", "project description")
	owner := fs.String("owner", "", "the owner's agent id (default: $AIPM_USER, else your user name, else owner)")
	ownerName := fs.String("owner-name", "", "the owner's display name")
	pos, err := fs.parse(args, 0, 1, "[DIR] [--name N] [--owner ID]")
	if err != nil {
		return err
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if *owner == "" {
		*owner = defaultOwner(a.getenv("AIPM_USER"))
	}
	s, err := filestore.Init(dir, filestore.InitOptions{Name: *name, Description: *desc, OwnerID: *owner, OwnerName: *ownerName,
		AgentCommands: coordinator.DefaultAgentCommands()},
		filestore.Options{Now: a.now})
	if err != nil {
		return err
	}
	p, err := s.Project()
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(p)
	}
	a.printf("Initialized project %q in %s\n", p.Name, s.Dir())
	a.printf("Owner: %s (human). Add agents with `aipm agent add ID --hierarchy manager|worker --parent ID`.\n", p.OwnerID)
	return nil
}

// defaultOwner picks a valid agent id for the person running init.
func defaultOwner(env string) string {
	for _, c := range []string{env, userName()} {
		c = strings.ToLower(strings.TrimSpace(c))
		if filestore.ValidateAgentID(c) == nil {
			return c
		}
	}
	return "owner"
}

func userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
