package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A copy of a repository — a clone, or an archive — carries everything under .ai-pm,
// runtime/ included if someone committed it. Nothing in it opens a session, redeems a
// ticket or approves a command in the copy: what this machine trusts is keyed by where the
// repository is, outside it.
func TestCopiedStoreTrustsNothing(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.OpenChat(human, "w1"); err != nil {
		t.Fatal(err)
	}
	chat, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(chat.Token); err != nil {
		t.Fatalf("the token does not work where it was issued: %v", err)
	}
	_, ticket, err := s.CreateSpawn(NewSpawn{AgentID: "w2", Purpose: PurposeChat})
	if err != nil {
		t.Fatal(err)
	}
	cmds := map[string]AgentCommand{"evil": {Command: []string{"sh", "-c", "echo pwned"}}}
	if _, err := s.ApproveCommands(cmds, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.path("runtime", "trust")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("approvals written under the repository: %v", err)
	}
	if _, err := os.Lstat(s.path("runtime", "credentials")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("passkey hashes written under the repository: %v", err)
	}
	// Whatever this machine trusts, copied into the repository too.
	md, err := s.MachineDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(s.path("runtime", "trust"), os.DirFS(md)); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(s.path("runtime"), os.DirFS(md)); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(s.Root())); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dst, Options{Now: s.Now})
	if err != nil {
		t.Fatal(err)
	}
	if cmd, _ := c.MachineDir(); cmd == md {
		t.Fatalf("the copy shares the original's machine directory %s", md)
	}
	if _, err := c.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeChat, PID: os.Getpid()}); !isCode(err, "invalid_passkey") {
		t.Errorf("the copied passkey hash opened a session: %v", err)
	}
	if _, err := c.Session(chat.Token); !isCode(err, "invalid_session") {
		t.Errorf("the copied session record accepted its token: %v", err)
	}
	if _, err := c.Authenticate(AuthRequest{AgentID: "w2", Passkey: ticket, PID: os.Getpid()}); !isCode(err, "invalid_ticket") {
		t.Errorf("the copied spawn record accepted its ticket: %v", err)
	}
	prog, err := c.CommandProgram(cmds["evil"], "", c.Root())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.CommandApproved("evil", cmds["evil"], prog); ok || err != nil {
		t.Errorf("the copied approval approves the command in the copy: %v, %v", ok, err)
	}
}

// An approval covers the file a command names in the repository: a change to the file
// (a pull) withdraws it, and a file that appears where none was is not the one approved.
func TestApprovalCoversRepositoryProgram(t *testing.T) {
	s := newTestStore(t)
	ac := AgentCommand{Command: []string{"./agent.sh", "{agent_id}"}}
	prog := func() Program {
		t.Helper()
		p, err := s.CommandProgram(ac, "", s.Root())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	approved := func() bool {
		t.Helper()
		ok, err := s.CommandApproved("custom", ac, prog())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if p := prog(); !p.Missing || p.Exec != "" {
		t.Fatalf("a missing program resolved to %+v", p)
	}
	if _, err := s.ApproveCommands(map[string]AgentCommand{"custom": ac}, ""); err != nil {
		t.Fatal(err)
	}
	if !approved() {
		t.Fatal("not approved right after approval")
	}
	script := filepath.Join(s.Root(), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho one\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if approved() {
		t.Fatal("a program that appeared in the repository is approved")
	}
	p := prog()
	if p.Path != "./agent.sh" || len(p.SHA256) != 64 || p.Exec == "" {
		t.Fatalf("resolved to %+v", p)
	}
	if _, err := s.ApproveCommands(map[string]AgentCommand{"custom": ac}, ""); err != nil {
		t.Fatal(err)
	}
	if !approved() {
		t.Fatal("not approved after approving the file")
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho two\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if approved() {
		t.Fatal("a changed repository program is still approved")
	}
	// A bare name found through a relative PATH entry is a repository file too.
	if err := os.MkdirAll(filepath.Join(s.Root(), "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root(), "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "bin"+string(os.PathListSeparator)+os.Getenv("PATH"))
	p, err := s.ResolveProgram("tool", s.Root())
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != "./bin/tool" || p.SHA256 == "" {
		t.Fatalf("tool on a relative PATH entry resolved to %+v", p)
	}
}

func isCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
