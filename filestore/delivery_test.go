package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withDeliveryFault makes every send fail between its two appends, as fault does (panic:
// a kill; an error: a full disk), until the test ends.
func withDeliveryFault(t *testing.T, fault func() error) {
	t.Helper()
	deliveryFault = fault
	t.Cleanup(func() { deliveryFault = nil })
}

// killedSend sends a message from owner to w1 whose process dies between the sender's
// line and the receiver's, and returns the message's id.
func killedSend(t *testing.T, s *Store, content string) string {
	t.Helper()
	withDeliveryFault(t, func() error { panic("killed") })
	func() {
		defer func() {
			if r := recover(); r != "killed" {
				t.Fatalf("send did not reach the fault: %v", r)
			}
		}()
		s.SendMessage(as("owner"), SendRequest{To: "w1", Content: content})
	}()
	deliveryFault = nil
	var id string
	for _, m := range mailbox(t, s, "owner") {
		if m.Content == content {
			id = m.ID
		}
	}
	if id == "" {
		t.Fatalf("the sender's copy of %q was not written", content)
	}
	if n := count(mailbox(t, s, "w1"), id); n != 0 {
		t.Fatalf("the receiver's copy was written before the fault (%d)", n)
	}
	return id
}

func count(msgs []Message, id string) int {
	n := 0
	for _, m := range msgs {
		if m.ID == id {
			n++
		}
	}
	return n
}

// onlyInSender returns Check's findings about messages in one mailbox only.
func onlyInSender(t *testing.T, s *Store) []Problem {
	t.Helper()
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	var out []Problem
	for _, p := range probs {
		if strings.Contains(p.Problem, "in this mailbox only") {
			out = append(out, p)
		}
	}
	return out
}

// A kill between the two appends: doctor reports the message, and the next reader (here
// another process's Store) delivers it, once.
func TestKilledSendIsReportedAndDeliveredByTheNextReader(t *testing.T) {
	s := newTestStore(t)
	send(t, s, "owner", "w1", "before")
	id := killedSend(t, s, "half sent")

	probs := onlyInSender(t, s)
	if len(probs) != 1 || probs[0].Path != ".ai-pm/agents/owner/chat.jsonl" || probs[0].Line != 2 ||
		!strings.Contains(probs[0].Problem, "message "+id+" to w1 is in this mailbox only: .ai-pm/agents/w1/chat.jsonl lacks it") ||
		!strings.Contains(probs[0].Problem, "aipm doctor --repair") {
		t.Fatalf("doctor on a half-sent message: %v", probs)
	}

	next, err := Open(s.Root(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := next.TakeUnread("w1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Content != "before" || got[1].ID != id || got[1].Content != "half sent" || got[1].ReceiverID != "" {
		t.Fatalf("the next reader got %+v, want before and the half-sent message", got)
	}
	if n := count(mailbox(t, s, "w1"), id); n != 1 {
		t.Errorf("receiver holds %d copies, want 1", n)
	}
	if probs := onlyInSender(t, s); len(probs) != 0 {
		t.Errorf("doctor after the repair: %v", probs)
	}
	if data, _ := os.ReadFile(s.deliveryPath()); len(data) != 0 {
		t.Errorf("delivery record left: %q", data)
	}
}

// A full disk between the two appends: the send is undone, so the message is in neither
// mailbox, the sender gets the error and may send it again; nothing is left to repair.
func TestFailedSendIsUndone(t *testing.T) {
	s := newTestStore(t)
	send(t, s, "owner", "w1", "before")
	withDeliveryFault(t, func() error { return syscall.ENOSPC })
	_, err := s.SendMessage(as("owner"), SendRequest{To: "w1", Content: "disk full"})
	if !errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "kept") {
		t.Fatalf("send on a full disk: %v", err)
	}
	deliveryFault = nil
	for _, id := range []string{"owner", "w1"} {
		var got []string
		for _, m := range mailbox(t, s, id) {
			got = append(got, m.Content)
		}
		if strings.Join(got, "|") != "before" {
			t.Errorf("%s's mailbox after the failed send: %q, want only before", id, got)
		}
	}
	if data, _ := os.ReadFile(s.deliveryPath()); len(data) != 0 {
		t.Errorf("delivery record left: %q", data)
	}
	if probs := onlyInSender(t, s); len(probs) != 0 {
		t.Errorf("doctor after the undone send: %v", probs)
	}
	send(t, s, "owner", "w1", "disk full")
	if n := len(mailbox(t, s, "w1")); n != 2 {
		t.Errorf("w1 holds %d messages after the resend, want 2", n)
	}
}

// A kill between the two appends, then another sender's message: that send (the next
// writer) delivers the half-sent message first, each once, in order.
func TestKilledSendIsDeliveredByTheNextWriter(t *testing.T) {
	s := newTestStore(t)
	id := killedSend(t, s, "half sent")
	send(t, s, "w2", "owner", "unrelated") // human-AI: no conversation needed
	send(t, s, "owner", "w1", "second")
	var got []string
	for _, m := range mailbox(t, s, "w1") {
		got = append(got, m.Content)
	}
	if strings.Join(got, "|") != "half sent|second" || count(mailbox(t, s, "w1"), id) != 1 {
		t.Errorf("w1's mailbox: %q, want half sent|second", got)
	}
	if probs := onlyInSender(t, s); len(probs) != 0 {
		t.Errorf("doctor after the repair: %v", probs)
	}
}

// Another agent reading its mail does not finish (nor stumble on) a message to w1.
func TestReaderFinishesOnlyItsOwnMail(t *testing.T) {
	s := newTestStore(t)
	id := killedSend(t, s, "for w1")
	if _, err := s.TakeUnread("w2"); err != nil {
		t.Fatal(err)
	}
	if n := count(mailbox(t, s, "w1"), id); n != 0 {
		t.Errorf("w2's read delivered w1's message")
	}
	if data, _ := os.ReadFile(s.deliveryPath()); len(data) == 0 {
		t.Errorf("w2's read cleared the record of w1's message")
	}
}

// Without the record (lost, or a mailbox from another clone), doctor still finds the
// message by comparing the mailboxes, and --repair (RepairDeliveries) delivers it once.
func TestRepairDeliveriesWithoutRecord(t *testing.T) {
	s := newTestStore(t)
	id := killedSend(t, s, "record lost")
	if err := os.Remove(s.deliveryPath()); err != nil {
		t.Fatal(err)
	}
	if len(onlyInSender(t, s)) != 1 {
		t.Fatalf("doctor does not report the message in one mailbox only")
	}
	fixed, err := s.RepairDeliveries()
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) != 1 || !fixed[0].Delivered || fixed[0].Message.ID != id || fixed[0].Message.ReceiverID != "w1" {
		t.Fatalf("RepairDeliveries: %+v", fixed)
	}
	if !strings.Contains(fixed[0].String(), "message "+id+" from owner delivered to w1") {
		t.Errorf("report: %s", fixed[0])
	}
	if again, err := s.RepairDeliveries(); err != nil || len(again) != 0 {
		t.Errorf("second repair: %+v, %v", again, err)
	}
	if n := count(mailbox(t, s, "w1"), id); n != 1 {
		t.Errorf("receiver holds %d copies, want 1", n)
	}
	if probs := onlyInSender(t, s); len(probs) != 0 {
		t.Errorf("doctor after the repair: %v", probs)
	}
}

// A record whose sender's copy never landed (killed before the first append), or a torn
// record, delivers nothing: the message was never sent.
func TestUnsentRecordDeliversNothing(t *testing.T) {
	s := newTestStore(t)
	m := Message{ID: NewID(PrefixMessage, s.Now()), SenderID: "owner", Content: "never sent", CreatedAt: s.Now()}
	for _, rec := range []string{
		`{"to":"w1","message":{"id":"` + m.ID + `","senderId":"owner","content":"never sent","createdAt":"2026-01-02T03:04:05Z"}}`,
		`{"to":"w1","mess`,
	} {
		if err := os.WriteFile(s.deliveryPath(), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
		send(t, s, "w1", "owner", "next")
		if n := count(mailbox(t, s, "w1"), m.ID); n != 0 {
			t.Errorf("record %q: the unsent message was delivered", rec)
		}
		if data, _ := os.ReadFile(s.deliveryPath()); len(data) != 0 {
			t.Errorf("record %q left: %q", rec, data)
		}
	}
}

// A receiver's mailbox aipm refuses to open (a link): the sender's copy is taken back, the
// error names the link, and later messages are not held up by it.
func TestRefusedReceiverUndoesTheSend(t *testing.T) {
	s := newTestStore(t)
	send(t, s, "owner", "w2", "before")
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, s.mailboxPath("w1")); err != nil {
		t.Fatal(err)
	}
	_, err := s.SendMessage(as("owner"), SendRequest{To: "w1", Content: "to a link"})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || strings.Contains(err.Error(), "kept") {
		t.Fatalf("send to a linked mailbox: %v", err)
	}
	if got := mailbox(t, s, "owner"); len(got) != 1 || got[0].Content != "before" {
		t.Errorf("owner's mailbox: %+v, want only before", got)
	}
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Errorf("written through the link: %q", data)
	}
	send(t, s, "owner", "w2", "after")
}

// A record an earlier version left in runtime/ itself (with its journal there) is taken
// into runtime/journal/ when a store is opened: the half-sent message is delivered once,
// and neither old file stays.
func TestLegacyDeliveryRecordIsAdopted(t *testing.T) {
	s := newTestStore(t)
	id := killedSend(t, s, "half sent before the upgrade")
	oldDelivery := filepath.Join(s.Dir(), "runtime", "delivery.json")
	oldJournal := filepath.Join(s.Dir(), "runtime", "changes.log")
	if err := os.Rename(s.deliveryPath(), oldDelivery); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oldJournal, []byte("tasks/tsk_1.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.Dir(), "runtime", "locks", "temp-swept.lock"))

	next, err := Open(s.Root(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{oldDelivery, oldJournal} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	got, err := next.TakeUnread("w1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("the next reader got %+v, want the half-sent message", got)
	}
	if n := count(mailbox(t, s, "w1"), id); n != 1 {
		t.Errorf("receiver holds %d copies, want 1", n)
	}
}
