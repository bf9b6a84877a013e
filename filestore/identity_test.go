package filestore

import (
	"testing"
)

// TestCloneIdentity: a clone's human is matched from a git identity by id, e-mail local
// part or display name (never an AI agent, never when two match), and set only to a human
// member; "" records that nobody is set.
func TestCloneIdentity(t *testing.T) {
	s := newTestStore(t)
	for _, n := range []NewAgent{
		{ID: "bob", Type: AgentHuman, Name: "Bob Builder", ParentID: "owner"},
		{ID: "robert", Type: AgentHuman, Name: "Bob", ParentID: "owner"},
		{ID: "carol", Type: AgentHuman, ParentID: "owner"},
		{ID: "dave", ParentID: "owner"}, // an AI agent
	} {
		if _, _, err := s.AddAgent(human, n); err != nil {
			t.Fatal(err)
		}
	}
	for ident, want := range map[string]string{
		"Carol <carol@example.com>":       "carol",  // the e-mail's local part
		"C. Smith <CAROL@example.com>":    "carol",  // case-insensitive
		"carol <c.smith@example.com>":     "carol",  // the name as an id
		"Bob Builder <bb@example.com>":    "bob",    // the display name
		"Bob <bob@example.com>":           "",       // bob by e-mail, robert by name: ask
		"Dave <dave@example.com>":         "",       // an AI agent is nobody's identity
		"Mallory <mallory@example.com>":   "",       // nobody
		"<carol@example.com>":             "carol",  // no name
		"Robert Roe <robert@example.com>": "robert", // id from the e-mail
	} {
		got, err := s.MatchHuman(ident)
		if err != nil || got != want {
			t.Errorf("MatchHuman(%q) = %q, %v; want %q", ident, got, err, want)
		}
	}

	if id, err := s.Identity(); id != nil || err != nil {
		t.Fatalf("a new store has an identity: %+v, %v", id, err)
	}
	if _, err := s.SetIdentity("dave", "test"); code(err) != "not_human" {
		t.Errorf("an AI agent as identity: %v", err)
	}
	if _, err := s.SetIdentity("ghost", "test"); err == nil {
		t.Errorf("an unknown agent as identity")
	}
	if _, err := s.SetIdentity("", "nobody matched"); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Identity(); err != nil || id == nil || id.Human != "" || id.From != "nobody matched" {
		t.Fatalf("unset identity: %+v, %v", id, err)
	}
	if _, err := s.SetIdentity("carol", "aipm whoami --set"); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Identity(); err != nil || id.Human != "carol" {
		t.Fatalf("identity: %+v, %v", id, err)
	}
}
