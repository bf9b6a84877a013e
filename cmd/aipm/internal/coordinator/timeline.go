package coordinator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// timeline prints what happens in a project as it happens, for people watching `aipm run
// --timeline` or `aipm demo`: new history events (events.jsonl) and new chat messages (the
// receivers' mailbox lines), read incrementally from where it last stopped.
type timeline struct {
	s       *filestore.Store
	say     func(format string, args ...any)
	offsets map[string]int64
	titles  map[string]string
}

func newTimeline(s *filestore.Store, say func(format string, args ...any)) *timeline {
	t := &timeline{s: s, say: say, offsets: map[string]int64{}, titles: map[string]string{}}
	// Only what happens from now on.
	for _, p := range t.files() {
		if fi, err := os.Stat(p); err == nil {
			t.offsets[p] = fi.Size()
		}
	}
	return t
}

func (t *timeline) files() []string {
	files := []string{filepath.Join(t.s.Dir(), "events.jsonl")}
	mailboxes, _ := filepath.Glob(filepath.Join(t.s.Dir(), "agents", "*", "chat.jsonl"))
	return append(files, mailboxes...)
}

// poll prints every complete line added since the last poll.
func (t *timeline) poll() {
	for _, p := range t.files() {
		for _, line := range t.newLines(p) {
			if filepath.Base(p) == "events.jsonl" {
				t.event(line)
			} else {
				t.message(filepath.Base(filepath.Dir(p)), line)
			}
		}
	}
}

func (t *timeline) newLines(path string) [][]byte {
	f, err := filestore.OpenRead(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	off := t.offsets[path]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil
	}
	t.offsets[path] = off + int64(end) + 1
	return bytes.Split(data[:end], []byte("\n"))
}

func (t *timeline) title(id string) string {
	if s, ok := t.titles[id]; ok {
		return s
	}
	tk, err := t.s.Task(id)
	if err != nil {
		return ""
	}
	t.titles[id] = tk.Title
	return tk.Title
}

func (t *timeline) event(line []byte) {
	var e filestore.Event
	if json.Unmarshal(line, &e) != nil {
		return
	}
	switch e.Entity {
	case "spawn", "session", "execution", "agent":
		return // the coordinator's own lines say it better; sessions and runs are noise here
	}
	what := e.Entity + " " + e.ID
	if e.Entity == "task" {
		what = fmt.Sprintf("task %q", t.title(e.ID))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s ", e.Actor)
	switch e.Change {
	case "created":
		fmt.Fprintf(&b, "created %s", what)
		if e.To != "" && e.Entity != "delegation" {
			fmt.Fprintf(&b, " (%s)", e.To)
		}
		if e.Entity == "delegation" || e.Entity == "conversation" {
			fmt.Fprintf(&b, ": %s", Clip(e.Reason, 60))
		}
	case "status", "state":
		fmt.Fprintf(&b, "%s: %s → %s", what, e.From, e.To)
		if e.Reason != "" {
			fmt.Fprintf(&b, " (%s)", Clip(e.Reason, 60))
		}
	case "assignee":
		fmt.Fprintf(&b, "assigned %s to %s", what, e.To)
	case "dependencies":
		fmt.Fprintf(&b, "%s now depends on %s", what, e.To)
	case "completion_reported":
		fmt.Fprintf(&b, "reported %s %s: %s", what, e.To, Clip(e.Reason, 60))
	case "notified":
		return
	case "landing":
		if e.Actor == "aipm-land" {
			return // the merge queue's own lines say it
		}
		fmt.Fprintf(&b, "%s: landing %s", what, e.To)
	default:
		fmt.Fprintf(&b, "%s %s %s", what, e.Change, e.To)
	}
	t.say("%s", b.String())
}

func (t *timeline) message(owner string, line []byte) {
	var m struct {
		SenderID       string `json:"senderId"`
		ReceiverID     string `json:"receiverId"`
		Content        string `json:"content"`
		ConversationID string `json:"conversationId"`
	}
	if json.Unmarshal(line, &m) != nil || m.ReceiverID != "" || m.SenderID == owner {
		return // the sender's copy: print each message once, from the receiver's mailbox
	}
	conv := ""
	if m.ConversationID != "" {
		conv = " [" + m.ConversationID + "]"
	}
	t.say("%-12s → %s%s: %s", m.SenderID, owner, conv, Clip(m.Content, 80))
}

// Clip shortens s to at most n runes, marking a cut with "…", with its newlines shown as ⏎.
func Clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
