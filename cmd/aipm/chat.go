package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aipm/aipm/filestore"
)

// The human side of chat (SPEC §9): a human sends messages to an agent, reads the
// transcript of that chat (live with --follow), and opens or closes a chat with an AI
// agent so that a chat session is started for it, or told to exit. The human is the
// acting human of every other command (--as, AIPM_USER, the owner); its mailbox is the
// one read.

func (a *app) chatSend(args []string) error {
	fs := newFlags(a, "chat send")
	to := fs.String("to", "", "the agent `ID` to send to (or give it first: aipm chat send AGENT \"TEXT\")")
	task := fs.String("task", "", "the `TASK` the message is about (recorded as relatedTaskId)")
	pos, err := fs.parse(args, 1, 2, `AGENT "TEXT" (or --to AGENT "TEXT"; TEXT - reads it from stdin) [--task TASK]`)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 2 && *to != "":
		return &usageError{msg: fmt.Sprintf("name the agent once: either aipm chat send %s \"TEXT\" or --to %s", pos[0], *to), path: "chat send"}
	case len(pos) == 2:
		*to, pos = pos[0], pos[1:]
	case *to == "":
		return &usageError{msg: `usage: aipm chat send AGENT "TEXT" (or --to AGENT "TEXT"): say who the message is for`, path: "chat send"}
	}
	text := pos[0]
	if text == "-" {
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return fmt.Errorf("reading the message from stdin: %w", err)
		}
		// `echo text | aipm chat send --to w1 -` should not send echo's newline.
		text = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	if *to, err = agentID(s, *to); err != nil {
		return err
	}
	if *task, err = taskID(s, *task); err != nil {
		return err
	}
	sent, err := s.SendMessage(actor, filestore.SendRequest{To: *to, Content: text, RelatedTaskID: *task})
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(sent.Message)
	}
	a.printf("%s\n", sent.Message.ID)
	return nil
}

func (a *app) chatLog(args []string) error {
	fs := newFlags(a, "chat log")
	limit := fs.Int("limit", filestore.DefaultMessageLimit, fmt.Sprintf("show the last N messages (1..%d)", filestore.MaxMessageLimit))
	follow := fs.Bool("follow", false, "keep running and print new messages as they arrive, until interrupted (with --json: one JSON object per line)")
	pos, err := fs.parse(args, 0, 1, "[AGENT] [--limit N] [--follow]")
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > filestore.MaxMessageLimit {
		return fmt.Errorf("--limit %d: want 1..%d", *limit, filestore.MaxMessageLimit)
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		if *follow {
			return fmt.Errorf("usage: aipm chat log AGENT --follow: name the agent whose chat to follow")
		}
		return a.chatInbox(s, actor.ID, fs.json)
	}
	pid, err := agentID(s, pos[0])
	if err != nil {
		return err
	}
	partner, err := s.Agent(pid)
	if err != nil {
		return err
	}
	if partner.ID == actor.ID {
		return &filestore.Error{Code: "invalid_argument", Message: "agent " + actor.ID + " has no chat with itself",
			Hint: "name another agent; `aipm chat log` alone shows your unread messages", Kind: filestore.ErrInvalid}
	}
	names, err := agentNames(s)
	if err != nil {
		return err
	}
	t := &transcript{a: a, s: s, human: actor.ID, partner: partner.ID, names: names, json: fs.json, stream: *follow}
	if !*follow {
		return t.print(*limit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return t.follow(ctx, *limit)
}

// transcript prints one human's chat with one partner, from the human's own mailbox,
// which holds both directions in send order.
type transcript struct {
	a              *app
	s              *filestore.Store
	human, partner string
	names          map[string]string
	json           bool            // print messages as JSON
	stream         bool            // --follow: JSON lines rather than one array
	last           string          // id of the last message printed
	shown          map[string]bool // ids of the messages printed
}

// print prints the last limit messages and remembers the last one printed.
func (t *transcript) print(limit int) error {
	page, err := t.s.MessagesWith(t.human, t.partner, limit)
	if err != nil {
		return err
	}
	if n := len(page.Messages); n > 0 {
		t.last = page.Messages[n-1].ID
	}
	if err := t.markSeen(page.Messages); err != nil {
		return err
	}
	if t.json && !t.stream {
		out := make([]filestore.Message, len(page.Messages))
		for i, m := range page.Messages {
			out[i] = t.complete(m)
		}
		return t.a.printJSON(out)
	}
	if !t.json {
		switch {
		case len(page.Messages) == 0:
			t.a.printf("No messages between %s and %s yet.\n", t.human, t.name(t.partner))
		case page.Truncated && len(page.Messages) == 1:
			t.a.printf("Chat between %s and %s, last message (--limit shows more):\n", t.human, t.name(t.partner))
		case page.Truncated:
			t.a.printf("Chat between %s and %s, last %d messages (--limit shows more):\n", t.human, t.name(t.partner), len(page.Messages))
		default:
			t.a.printf("Chat between %s and %s:\n", t.human, t.name(t.partner))
		}
	}
	return t.emit(page.Messages)
}

// follow prints the last limit messages, then every new one as it lands, until ctx is
// done. It watches the human's mailbox directory: every message of the chat, either way,
// is appended to that mailbox (after the sender's copy, under the store lock, so once it
// is there the send is complete).
func (t *transcript) follow(ctx context.Context, limit int) error {
	// The human is a member, so its directory exists (agent.json is in it).
	dir := filepath.Join(t.s.Dir(), "agents", t.human)
	// Changes are queued from the moment wakeOn returns, so a message sent while the first
	// page is read is either on that page or wakes the loop below: never lost.
	wake, stop, err := t.a.wakeOn(dir, func(path string) bool { return path == "chat.jsonl" })
	if err != nil {
		return err
	}
	defer stop()
	if err := t.print(limit); err != nil {
		return err
	}
	fmt.Fprintf(t.a.stderr, "Following the chat with %s; interrupt (Ctrl-C) to stop.\n", t.partner)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			if err := t.printNew(); err != nil {
				return err
			}
		}
	}
}

// printNew prints the messages after the last one printed. A mailbox only grows, so they
// are the tail after that message; if it is no longer among the last MaxMessageLimit
// messages (a burst, or a mailbox rewritten by hand), the whole page is new.
func (t *transcript) printNew() error {
	page, err := t.s.MessagesWith(t.human, t.partner, filestore.MaxMessageLimit)
	if err != nil {
		return err
	}
	msgs := page.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].ID == t.last {
			msgs = msgs[i+1:]
			break
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	t.last = msgs[len(msgs)-1].ID
	if err := t.emit(msgs); err != nil {
		return err
	}
	return t.markSeen(msgs)
}

// emit prints messages one per line (text or JSON lines).
func (t *transcript) emit(msgs []filestore.Message) error {
	for _, m := range msgs {
		if t.json {
			b, err := json.Marshal(t.complete(m))
			if err != nil {
				return err
			}
			t.a.printf("%s\n", b)
			continue
		}
		t.a.printf("%s\n", t.line(m))
	}
	return nil
}

// complete fills in the receiver of a received message (the mailbox leaves it out of the
// receiver's copy), so each printed message says both ends.
func (t *transcript) complete(m filestore.Message) filestore.Message {
	if m.ReceiverID == "" {
		m.ReceiverID = t.human
	}
	return m
}

// line renders one message for humans: time (UTC, as stored), sender, content, and the
// conversation and task it belongs to. Continuation lines of a multi-line message are
// indented under the first.
func (t *transcript) line(m filestore.Message) string {
	head := fmt.Sprintf("%s  %s: ", localTime(m.CreatedAt), t.name(m.SenderID))
	body := strings.ReplaceAll(m.Content, "\n", "\n"+strings.Repeat(" ", 22))
	var refs []string
	if m.ConversationID != "" {
		refs = append(refs, "conversation "+m.ConversationID)
	}
	if m.RelatedTaskID != "" {
		refs = append(refs, "task "+m.RelatedTaskID)
	}
	if len(refs) > 0 {
		body += "  [" + strings.Join(refs, ", ") + "]"
	}
	return head + body
}

// name is an agent's display name with its id, or just the id when they are the same.
func (t *transcript) name(id string) string {
	if n := t.names[id]; n != "" && n != id {
		return n + " (" + id + ")"
	}
	return id
}

// markSeen records shown as printed and marks the human's unread messages read once all of
// them have been printed. The read cursor is one offset for the whole mailbox, so an unread
// message from anyone else (or one older than the page) keeps them all unread, for
// `aipm chat log` to show. Unread's offset ends at the lines it read, so a message landing
// meanwhile stays unread.
func (t *transcript) markSeen(shown []filestore.Message) error {
	if t.shown == nil {
		t.shown = map[string]bool{}
	}
	for _, m := range shown {
		t.shown[m.ID] = true
	}
	msgs, next, err := t.s.Unread(t.human)
	if err != nil || len(msgs) == 0 {
		return err
	}
	for _, m := range msgs {
		if !t.shown[m.ID] {
			return nil
		}
	}
	return t.s.MarkRead(t.human, next)
}

// chatInbox prints the human's unread messages, from anyone, and marks them read.
func (a *app) chatInbox(s *filestore.Store, human string, asJSON bool) error {
	msgs, err := s.TakeUnread(human)
	if err != nil {
		return err
	}
	if asJSON {
		for i := range msgs {
			msgs[i].ReceiverID = human
		}
		if msgs == nil {
			msgs = []filestore.Message{}
		}
		return a.printJSON(msgs)
	}
	if len(msgs) == 0 {
		a.printf("No unread messages for %s.\n", human)
		return nil
	}
	names, err := agentNames(s)
	if err != nil {
		return err
	}
	t := &transcript{a: a, s: s, human: human, names: names}
	a.printf("Unread messages for %s:\n", human)
	for _, m := range msgs {
		a.printf("%s\n", t.line(m))
	}
	return nil
}

// agentNames maps agent ids to display names.
func agentNames(s *filestore.Store) (map[string]string, error) {
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(agents))
	for _, ag := range agents {
		names[ag.ID] = ag.Name
	}
	return names, nil
}

func (a *app) chatOpen(args []string) error  { return a.chatSetOpen(args, true) }
func (a *app) chatClose(args []string) error { return a.chatSetOpen(args, false) }

func (a *app) chatSetOpen(args []string, open bool) error {
	verb := "close"
	if open {
		verb = "open"
	}
	fs := newFlags(a, "chat "+verb)
	s, actor, id, err := a.openOneAs(fs, args, "AGENT", agentID)
	if err != nil {
		return err
	}
	before, err := s.Chat(id)
	if err != nil {
		return err
	}
	var st *filestore.ChatState
	if open {
		st, err = s.OpenChat(actor, id)
	} else {
		st, err = s.CloseChat(actor, id)
	}
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(st)
	}
	switch {
	case open && before.Open:
		a.printf("The chat with %s was already open; renewed it.\n", st.AgentID)
	case open:
		a.printf("Opened a chat with %s: it has chat work now: its next authenticate opens a chat session.\n", st.AgentID)
		a.printf("Talk with `aipm chat send --to %s \"...\"` and `aipm chat log %s --follow`; end it with `aipm chat close %s`.\n", st.AgentID, st.AgentID, st.AgentID)
	case !before.Open && before.ClosedAt != nil:
		a.printf("The chat with %s is already closed.\n", st.AgentID)
	case !before.Open:
		a.printf("Closed the chat with %s (it was not open): a chat session it has is told to exit.\n", st.AgentID)
	default:
		a.printf("Closed the chat with %s: its chat session is told to exit.\n", st.AgentID)
	}
	return nil
}
