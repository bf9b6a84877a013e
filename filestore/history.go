package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Ways a change reaches the store, recorded in every history event.
const (
	ViaTool        = "tool"
	ViaCLI         = "cli"
	ViaFile        = "file"
	ViaCoordinator = "coordinator"
	// ViaUI is a human's click on the page `aipm ui` serves: the same rules as the CLI.
	ViaUI = "ui"
)

// Actor is who makes a change and through what: an agent's tool call, a human's CLI
// command or click in `aipm ui`, a hand edit, or the coordinator. Every change records
// the real actor.
type Actor struct {
	ID  string
	Via string
}

// Event is one line of .ai-pm/events.jsonl, the project's history.
type Event struct {
	At             time.Time `json:"at"`
	Actor          string    `json:"actor"`
	Via            string    `json:"via"`
	Entity         string    `json:"entity"`
	ID             string    `json:"id"`
	Change         string    `json:"change"`
	From           string    `json:"from,omitempty"`
	To             string    `json:"to,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	ConversationID string    `json:"conversation_id,omitempty"`
	RequesterID    string    `json:"requester_id,omitempty"`
	// Warning is what an audit check found amiss in a change it let through (a chat
	// request the requester's messages do not show, see chat_task.go).
	Warning string   `json:"warning,omitempty"`
	Fields  []string `json:"fields,omitempty"`
	// Changes holds the old and new value of each field an edit changed (dependencies as
	// comma-separated ids); events written before it was kept have only Fields.
	Changes []FieldChange `json:"changes,omitempty"`
	// Machine is the machine the change was made on (its id, as `aipm agent leases` shows
	// it): with the state shared by a remote, it says where a change came from.
	Machine string `json:"machine,omitempty"`
}

// FieldChange is one field of an edit, from its old value to its new one.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// appendEvent records a history event. History is not fsynced line by line: the entity file
// it describes is already durable, and the event is written right after it under the same
// lock.
func (s *Store) appendEvent(e Event) error {
	if e.Machine == "" {
		e.Machine = s.ThisMachine()
	}
	return engine.AppendLine(s.path("events.jsonl"), e, false)
}

// Events returns history events for one entity id (all events if id is empty), oldest
// first. Undecodable lines are skipped; `aipm doctor` reports them. For one id it reads
// only that entity's lines, found through the history index.
func (s *Store) Events(id string) ([]Event, error) {
	if id != "" {
		evs, _, err := s.EventsTail(id, -1)
		return evs, err
	}
	var out []Event
	err := engine.ScanLines(s.path("events.jsonl"), 0, func(l Line) error {
		var e Event
		if json.Unmarshal(l.Data, &e) == nil {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// HistoryShown is how many of an entity's latest history events a view shows: a task
// edited a million times must not cost a view a million lines.
const HistoryShown = 200

// EventsTail returns the last n history events of one entity (all of them if n < 0),
// oldest first, and how many it has in all.
func (s *Store) EventsTail(id string, n int) ([]Event, int, error) {
	offs, err := s.history.offsets(s.path("events.jsonl"), id)
	if err != nil || len(offs) == 0 {
		return nil, 0, err
	}
	total := len(offs)
	if n >= 0 && n < len(offs) {
		offs = offs[len(offs)-n:]
	}
	f, err := engine.OpenRead(s.path("events.jsonl"), 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	defer f.Close()
	var out []Event
	for _, off := range offs {
		line, err := lineAtOffset(f, off)
		if err != nil {
			return nil, 0, err
		}
		var e Event
		if json.Unmarshal(line, &e) != nil || e.ID != id {
			continue
		}
		out = append(out, e)
	}
	return out, total, nil
}

// lineAtOffset reads the line that starts at off, without its newline.
func lineAtOffset(f *os.File, off int64) ([]byte, error) {
	buf := make([]byte, 0, 512)
	chunk := make([]byte, 512)
	for {
		n, err := f.ReadAt(chunk, off+int64(len(buf)))
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			return append(buf, chunk[:i]...), nil
		}
		buf = append(buf, chunk[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return buf, nil
			}
			return nil, err
		}
	}
}

// lineIndex maps a key of each line of an append-only JSONL file (an entity id in
// events.jsonl, a notification key in an inbox) to the offsets of the lines that carry
// it, so finding them reads those lines, not the whole file. It reads only what was
// appended since it last looked; a file rewritten by git (another inode, or a shorter
// file) is indexed again from the top.
type lineIndex struct {
	mu   sync.Mutex
	key  func(line []byte) string
	ino  uint64
	off  int64
	byID map[string][]int64
	// persist is the history index file (history_index.go; "" for none): base, when open,
	// covers the file up to off, and the lines after it are in pairs (by the hash of their
	// key; byID is not used), added of them; tried is added at the last attempt to write
	// the file.
	persist string
	base    *eventsBase
	pairs   []eventsEntry
	added   int
	tried   int
}

// historyIndex indexes events.jsonl by entity id.
type historyIndex = lineIndex

func newHistoryIndex(persist string) *lineIndex { return &lineIndex{key: eventID, persist: persist} }

func (h *lineIndex) offsets(path, id string) ([]int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, err := engine.OpenRead(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			h.byID, h.off, h.ino = nil, 0, 0
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if ino := engine.FileIno(fi); h.byID == nil || ino != h.ino || fi.Size() < h.off {
		h.byID, h.off, h.ino, h.added, h.tried, h.pairs = map[string][]int64{}, 0, ino, 0, 0, nil
		h.openBase(f, ino, fi.Size())
	}
	// In chunks: the first look at a long history must not hold all of it in memory. A
	// later one reads what was appended since, mostly a few lines.
	const chunk = 256 << 10
	buf := make([]byte, 0, min(chunk, max(fi.Size()-h.off, 512)))
	for h.off < fi.Size() {
		want := min(int64(cap(buf)), fi.Size()-h.off)
		buf = buf[:want]
		n, err := f.ReadAt(buf, h.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		data, pos := buf[:n], h.off
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			if eid := h.key(data[:i]); eid != "" {
				if h.persist != "" {
					h.pairs = append(h.pairs, eventsEntry{eventHash(eid), pos})
				} else {
					h.byID[eid] = append(h.byID[eid], pos)
				}
				h.added++
			}
			pos += int64(i) + 1
			data = data[i+1:]
		}
		switch {
		case pos > h.off:
			h.off = pos
		case int64(n) < want || h.off+int64(n) >= fi.Size():
			// A torn or unfinished last line: next time.
			return h.found(f, id)
		case cap(buf) >= engine.MaxLine:
			// A line longer than any event aipm writes (a hand edit, a hostile push):
			// passed over, as every reader of the file passes over it (doctor names it),
			// so that one bad line does not take every task's history with it.
			next, ok, err := nextLine(f, h.off+int64(n), fi.Size())
			if err != nil {
				return nil, err
			}
			if !ok {
				return h.found(f, id) // no end yet: the torn or unfinished last line
			}
			h.off = next
			buf = buf[:0]
		default:
			buf = make([]byte, 0, 2*cap(buf)) // a line longer than the buffer
		}
	}
	return h.found(f, id)
}

// openBase opens the history index file for the history file of inode ino and size, if
// it can be trusted: lines up to its offset are then looked up in it.
func (h *lineIndex) openBase(f *os.File, ino uint64, size int64) {
	if h.base != nil {
		h.base.f.Close()
		h.base = nil
	}
	if h.persist == "" {
		return
	}
	b, err := openEventsBase(h.persist)
	if err != nil {
		return
	}
	if b.ino != ino || b.off > size || historyTail(f, b.off) != b.tail {
		b.f.Close()
		return
	}
	h.base, h.off = b, b.off
}

// found returns the offsets of id's lines: those of the index file whose line does carry
// id, then those indexed in memory. It writes the index file anew when the lines indexed
// in memory have grown many.
func (h *lineIndex) found(f *os.File, id string) ([]int64, error) {
	if h.persist == "" {
		return slices.Clone(h.byID[id]), nil
	}
	if h.off > 0 && (h.base == nil && h.tried == 0 || h.added-h.tried >= eventsIndexEvery) {
		h.tried = max(h.added, 1)
		// The processes of a team index the same lines and come here together: the
		// first writes the file, the others take it up.
		if !h.adopt(f) || h.added >= eventsIndexEvery {
			h.save(f)
		}
	}
	var offs []int64
	hash := eventHash(id)
	if h.base != nil {
		var err error
		if offs, err = h.base.lookup(hash); err != nil {
			return nil, err
		}
	}
	for _, p := range h.pairs {
		if p.hash == hash {
			offs = append(offs, p.off)
		}
	}
	out := offs[:0]
	for _, o := range offs {
		if line, err := lineAtOffset(f, o); err == nil && h.key(line) == id {
			out = append(out, o)
		}
	}
	return out, nil
}

// adopt takes up the index file another process wrote since this one's, when it covers
// more of the history, but not past what this one has indexed: the lines it covers leave
// memory. It reports whether it did.
func (h *lineIndex) adopt(f *os.File) bool {
	var at int64
	if h.base != nil {
		at = h.base.off
	}
	b, err := openEventsBase(h.persist)
	if err != nil {
		return false
	}
	if b.ino != h.ino || b.off <= at || b.off > h.off || historyTail(f, b.off) != b.tail {
		b.f.Close()
		return false
	}
	// The lines in memory are in the history's order: those before b.off are in b.
	i := sort.Search(len(h.pairs), func(i int) bool { return h.pairs[i].off >= b.off })
	if h.base != nil {
		h.base.f.Close()
	}
	h.base, h.pairs = b, slices.Clone(h.pairs[i:])
	h.added, h.tried = len(h.pairs), 0
	return true
}

// save writes the index file (the old one's entries and those in memory) and, when it
// reads back as written, holds it in place of the entries in memory.
func (h *lineIndex) save(f *os.File) {
	tail := historyTail(f, h.off)
	if tail == "" {
		return
	}
	if err := writeEventsBase(h.persist, h.ino, h.off, tail, h.base, h.pairs); err != nil {
		return
	}
	b, err := openEventsBase(h.persist)
	if err != nil {
		return
	}
	if b.ino != h.ino || b.off != h.off || b.tail != tail { // another process's, meanwhile
		b.f.Close()
		return
	}
	if h.base != nil {
		h.base.f.Close()
	}
	h.base, h.pairs, h.added, h.tried = b, nil, 0, 0
}

// jsonField is the string value of a top-level key of a line as aipm writes it (compact,
// in struct order), else found by decoding the line (a hand-written one).
func jsonField(line []byte, name string) string {
	key := `"` + name + `":"`
	if i := bytes.Index(line, []byte(key)); i > 0 && (line[i-1] == ',' || line[i-1] == '{') {
		rest := line[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
			return string(rest[:j])
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	var v string
	if json.Unmarshal(m[name], &v) != nil {
		return ""
	}
	return v
}

// eventID is the "id" of one history line.
func eventID(line []byte) string { return jsonField(line, "id") }

// lastEventScan bounds how many of an entity's latest events LastEvent looks through: the
// event of a change just noticed is among them.
const lastEventScan = 20

// LastEvent returns the newest history event about the entity id for which match is true
// (nil if none is among its last lastEventScan events). It takes the store lock, so the
// event of a change whose file a caller has just read — written under the same lock right
// after the file — is already there.
func (s *Store) LastEvent(id string, match func(*Event) bool) (*Event, error) {
	var out *Event
	err := s.locked(func() error {
		evs, _, err := s.EventsTail(id, lastEventScan)
		if err != nil {
			return err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if match(&evs[i]) {
				out = &evs[i]
				return nil
			}
		}
		return nil
	})
	return out, err
}

// wroteEvent is the history event a commit of this process wrote for a task, with the
// version and time the commit gave the task.
type wroteEvent struct {
	version int
	at      time.Time
	ev      Event
}

// wroteBound is how many tasks' last events a process keeps (noteWrote).
const wroteBound = 4096

// noteWrote records the event a commit wrote for t (nil: none for now, as while the
// commit is between its file and its history line).
func (s *Store) noteWrote(t *Task, ev *Event) {
	s.wroteMu.Lock()
	defer s.wroteMu.Unlock()
	if ev == nil {
		delete(s.wrote, t.ID)
		return
	}
	if s.wrote == nil || len(s.wrote) >= wroteBound {
		s.wrote = map[string]wroteEvent{}
	}
	s.wrote[t.ID] = wroteEvent{version: t.Version, at: t.UpdatedAt, ev: *ev}
}

// LastEventOf is LastEvent for a task as it is now (its version and updated_at): when
// this process wrote that very version, and its event matches, the event is known
// without reading the history. Every commit of a task writes one event and a new
// version, so no later event of the task can follow the one that made the version it has.
func (s *Store) LastEventOf(t *Task, match func(*Event) bool) (*Event, error) {
	s.wroteMu.Lock()
	w, ok := s.wrote[t.ID]
	s.wroteMu.Unlock()
	if ok && w.version == t.Version && w.at.Equal(t.UpdatedAt) && match(&w.ev) {
		ev := w.ev
		ev.Fields = slices.Clone(w.ev.Fields)
		ev.Changes = slices.Clone(w.ev.Changes)
		return &ev, nil
	}
	return s.LastEvent(t.ID, match)
}

// nextLine is the offset just past the first '\n' of f at or after from (ok false when
// there is none before size), read in chunks: a long line costs its length once.
func nextLine(f *os.File, from, size int64) (next int64, ok bool, err error) {
	buf := make([]byte, 64<<10)
	for from < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-from)], from)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return from + int64(i) + 1, true, nil
		}
		if n == 0 {
			break
		}
		from += int64(n)
	}
	return 0, false, nil
}
