package filestore

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// countOpens counts, until the test ends, how many times each store file is opened.
func countOpens(t *testing.T) (counts func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	n := map[string]int{}
	restore := engine.OnOpen(func(path string) {
		mu.Lock()
		n[path]++
		mu.Unlock()
	})
	t.Cleanup(restore)
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for p, c := range n {
			out[p] = c
		}
		return out
	}
}

// writeMailboxes fills the mailboxes of owner, mgr, w1 and w2 with msgs messages sent in
// turn between them, a minute apart, each in its sender's mailbox (with receiverId) and its
// receiver's, as sends write them, and returns the lines written per mailbox.
func writeMailboxes(t *testing.T, s *Store, msgs int) map[string][]string {
	t.Helper()
	agents := []string{"owner", "mgr", "w1", "w2"}
	lines := map[string][]string{}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range msgs {
		from, to := agents[i%len(agents)], agents[(i+1+i/len(agents))%len(agents)]
		if from == to {
			to = agents[(i+1)%len(agents)]
		}
		m := Message{ID: NewID(PrefixMessage, at), SenderID: from, Content: fmt.Sprintf("message %d", i), CreatedAt: at}
		at = at.Add(time.Minute)
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m.ReceiverID = to
		sent, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines[from] = append(lines[from], string(sent))
		lines[to] = append(lines[to], string(got))
	}
	return lines
}

func writeLines(t *testing.T, path string, lines []string, tail string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mailboxFindings runs Check and returns its findings in the mailboxes and how many times
// it opened each of them.
func mailboxFindings(t *testing.T, s *Store) (found []string, opened map[string]int) {
	t.Helper()
	opens := countOpens(t)
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	opened = map[string]int{}
	for _, id := range []string{"owner", "mgr", "w1", "w2"} {
		opened[id] = opens()[s.mailboxPath(id)]
	}
	for _, p := range probs {
		if strings.Contains(p.Path, "chat.jsonl") {
			found = append(found, p.String())
		}
	}
	return found, opened
}

// doctor reads each mailbox once for both of its checks: the lines', and the pairing of
// sent copies with received ones, which looks at the last pairWindow lines of every
// mailbox and at its receivers' back from their ends. The mailboxes here are longer than
// that window; a problem near the start of one and a torn tail at the end of another show
// that the lines are all still checked, and a message its receiver lacks that the pairing
// still finds it.
func TestDoctorReadsEachMailboxOnce(t *testing.T) {
	s := newTestStore(t)
	lines := writeMailboxes(t, s, 6*pairWindow)
	for _, id := range []string{"owner", "mgr", "w1", "w2"} {
		if len(lines[id]) <= pairWindow {
			t.Fatalf("%s's mailbox has %d lines, not more than the pairing's window of %d", id, len(lines[id]), pairWindow)
		}
	}
	mgr := append(lines["mgr"][:3:3], append([]string{"not a message"}, lines["mgr"][3:]...)...)
	writeLines(t, s.mailboxPath("mgr"), mgr, "")
	writeLines(t, s.mailboxPath("owner"), lines["owner"], "")
	writeLines(t, s.mailboxPath("w1"), lines["w1"], `{"id":"msg_torn"`)
	writeLines(t, s.mailboxPath("w2"), lines["w2"], "")
	lineProblems := []string{
		".ai-pm/agents/mgr/chat.jsonl:4: message without id or senderId",
		fmt.Sprintf(".ai-pm/agents/w1/chat.jsonl:%d: torn last line without newline", len(lines["w1"])+1),
	}

	found, opened := mailboxFindings(t, s)
	for id, n := range opened {
		if n != 1 {
			t.Errorf("doctor opened %s's mailbox %d times, want once", id, n)
		}
	}
	if !startWith(found, lineProblems) {
		t.Errorf("doctor's findings in the mailboxes:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(lineProblems, "\n"))
	}

	// w2 lacks the last message owner sent it. Finding that still takes one read of each
	// mailbox; only the line of the message in owner's, for the report, is looked up
	// again.
	w2 := lines["w2"]
	var dropped Message
	for i := len(w2) - 1; i >= 0; i-- {
		if err := json.Unmarshal([]byte(w2[i]), &dropped); err != nil {
			t.Fatal(err)
		}
		if dropped.SenderID == "owner" {
			w2 = append(w2[:i:i], w2[i+1:]...)
			break
		}
	}
	writeLines(t, s.mailboxPath("w2"), w2, "")
	line := 0
	for i, l := range lines["owner"] {
		if strings.Contains(l, dropped.ID) {
			line = i + 1
		}
	}
	found, opened = mailboxFindings(t, s)
	want := []string{lineProblems[0], fmt.Sprintf(".ai-pm/agents/owner/chat.jsonl:%d: message %s to w2 is in this mailbox only", line, dropped.ID), lineProblems[1]}
	if !startWith(found, want) {
		t.Errorf("doctor's findings in the mailboxes:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
	for id, n := range opened {
		if want := map[bool]int{true: 2, false: 1}[id == "owner"]; n != want {
			t.Errorf("with a message missing, doctor opened %s's mailbox %d times, want %d", id, n, want)
		}
	}
}

// startWith tells whether each of got starts with the same of want.
func startWith(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}
