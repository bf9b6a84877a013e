package filestore

import (
	"bytes"
	"runtime"
	"sort"
	"sync"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// The mailboxes are most of a store's bytes. Check reads each once, last line first, for
// two checks at the same time: each line's (checkMessageLine, what lines does for the
// other JSONL files) and the pairing of every sent copy with its receiver's copy
// (unpairedMessages). First the last pairWindow lines of every mailbox, where the pairing
// looks for sent copies, are read; then, knowing which copies each receiver must hold,
// the rest of each mailbox, with its receiver's part of the pairing as far back as it
// goes. Both run while the rest of the store is checked.

// mailboxes starts the check of every mailbox (see above) and returns the wait for it,
// which adds its problems: first each mailbox's lines', then the pairing's. The lines are
// checked of the mailboxes of the agents read so far (agentsDir).
func (c *checker) mailboxes() (wait func()) {
	lined := map[string]bool{}
	for id := range c.agents {
		lined[id] = true
	}
	done := make(chan []Problem, 1)
	go func() { done <- checkMailboxes(c.s, lined) }()
	return func() { c.out = append(c.out, <-done...) }
}

// checkMessageLine is the check of one line of a mailbox: a problem, or "".
func checkMessageLine(l *mailLine) string {
	if !bytes.Contains(l.data, []byte(`"id"`)) {
		return "message without id or senderId" // not decoded: junk lines can be millions
	}
	if l.quick() {
		if !l.idSet || !l.senderSet {
			return "message without id or senderId"
		}
		return "" // what aipm writes, vouched for without decoding it
	}
	m, err := l.decoded()
	if err != nil {
		return "undecodable message: " + err.Error()
	}
	if m.ID == "" || m.SenderID == "" {
		return "message without id or senderId"
	}
	return ""
}

// mailboxRead is the read of one mailbox by checkMailboxes.
type mailboxRead struct {
	s           *Store
	owner, path string
	lined       bool       // its lines are checked
	b           *backLines // nil: no such file, or it could not be opened
	err         error      // opening or reading it failed
	n           int        // complete lines read, counted from the last
	window      []mailLine // the last pairWindow lines, last first
	sent        []sentCopy // the sent copies among them, last first (sentCopyOf)
	// The line checks. Read backward, the problems reported are the last ones met (the
	// first maxReported of the file), kept in a ring; a line too long to read ends a
	// forward read, so meeting one forgets the problems after it.
	probs   []backProblem
	nprobs  int
	tooLong int // n of the first line too long to read met so far, counted from the last
	found   []Problem
}

type backProblem struct {
	n       int // counted from the last line
	problem string
}

func (r *mailboxRead) open() {
	r.b, r.err = openBack(r.path)
	if r.err != nil {
		return
	}
	if r.b != nil && r.lined && r.b.size > engine.MaxJSONLFile {
		r.found = append(r.found, r.problem(1, "cannot read: %v", &engine.TooLargeError{Path: engine.RelToRepo(r.path), Size: r.b.size, Limit: engine.MaxJSONLFile}))
		r.lined = false
	}
}

// prev reads the line before, checks it when the lines are checked, and returns it.
func (r *mailboxRead) prev() (l mailLine, ok bool) {
	if r.b == nil || r.err != nil {
		return l, false
	}
	l.data, ok, r.err = r.b.prev()
	if !ok || r.err != nil {
		return l, false
	}
	r.n++
	if r.lined {
		r.checkLine(&l)
	}
	return l, true
}

func (r *mailboxRead) checkLine(l *mailLine) {
	line := l.data
	if len(line)+1 > engine.MaxLine {
		r.tooLong, r.probs, r.nprobs = r.n, r.probs[:0], 0
		return
	}
	p := markerProblem(line)
	if p == "" {
		p = checkMessageLine(l)
	}
	if p == "" {
		return
	}
	if len(r.probs) < maxReported {
		r.probs = append(r.probs, backProblem{r.n, p})
	} else {
		r.probs[r.nprobs%maxReported] = backProblem{r.n, p}
	}
	r.nprobs++
}

// finish closes the file and turns the line checks into problems, as lines reports them.
func (r *mailboxRead) finish() {
	if r.b == nil {
		if r.err != nil && r.lined {
			r.found = append(r.found, r.problem(1, "cannot read: %v", r.err))
		}
		return
	}
	r.b.close()
	if !r.lined {
		return
	}
	if r.err != nil {
		r.found = append(r.found, r.problem(1, "cannot read: %v", r.err))
		return
	}
	total := r.n
	line := func(n int) int { return total - n + 1 } // counted from the first
	last := total                                    // the last line a forward read checks
	if r.tooLong > 0 {
		last = line(r.tooLong) - 1
	}
	sort.Slice(r.probs, func(i, j int) bool { return r.probs[i].n > r.probs[j].n })
	for _, p := range r.probs {
		r.found = append(r.found, r.problem(line(p.n), "%s", p.problem))
	}
	if r.nprobs > maxReported {
		r.found = append(r.found, r.problem(last, "%d more problem lines like those above", r.nprobs-maxReported))
	}
	switch {
	case r.tooLong > 0:
		r.found = append(r.found, r.problem(last+1, "cannot read: %v", &engine.LineTooLongError{Path: engine.RelToRepo(r.path), Line: last + 1}))
	case r.b.torn > 0:
		r.found = append(r.found, r.problem(last+1, "torn last line without newline (an interrupted write; the next append repairs it)"))
	}
}

func (r *mailboxRead) problem(line int, format string, args ...any) Problem {
	c := &checker{s: r.s}
	c.add(r.path, line, format, args...)
	return c.out[0]
}

// checkMailboxes checks every mailbox (see above): the lines of the agents' in lined, the
// pairing of all.
func checkMailboxes(s *Store, lined map[string]bool) []Problem {
	var reads []*mailboxRead
	entries, pairErr := engine.ReadDir(s.path("agents"))
	for _, e := range entries {
		if owner := e.Name(); e.IsDir() && ValidateAgentID(owner) == nil {
			reads = append(reads, &mailboxRead{s: s, owner: owner, path: s.mailboxPath(owner), lined: lined[owner]})
		}
	}
	if pairErr != nil { // no pairing; the lines are checked all the same
		for id := range lined {
			reads = append(reads, &mailboxRead{s: s, owner: id, path: s.mailboxPath(id), lined: true})
		}
		sort.Slice(reads, func(i, j int) bool { return reads[i].owner < reads[j].owner })
	}
	// The last lines of every mailbox, with the sent copies among them.
	onEvery(len(reads), func(i int) {
		r := reads[i]
		r.open()
		for len(r.window) < pairWindow {
			line, ok := r.prev()
			if !ok {
				break
			}
			r.window = append(r.window, line)
			if c, ok := sentCopyOf(r.owner, &line); ok {
				r.sent = append(r.sent, c)
			}
		}
	})
	want := pairWant{}
	for _, r := range reads {
		if pairErr == nil && r.err != nil {
			pairErr = r.err
		}
		for _, c := range r.sent {
			want.add(r.owner, c)
		}
	}
	// The rest of every mailbox, with the copies its agent received from the others.
	byOwner := map[string]*mailboxRead{}
	for _, r := range reads {
		byOwner[r.owner] = r
	}
	order := make([]*mailboxRead, len(reads))
	copy(order, reads)
	sort.SliceStable(order, func(i, j int) bool { return order[i].size() > order[j].size() })
	var recvErr sync.Map
	onEvery(len(order), func(i int) {
		r := order[i]
		var received func(*mailLine) bool
		if ids := want[r.owner]; len(ids) > 0 && pairErr == nil {
			received = receivedBack(ids)
		}
		for i := range r.window {
			if received != nil && !received(&r.window[i]) {
				received = nil
			}
		}
		r.window = nil
		if r.b != nil {
			r.b.reuseChunks() // the lines kept (the sent copies) are the window's
		}
		for r.lined || received != nil {
			line, ok := r.prev()
			if !ok {
				break
			}
			if received != nil && !received(&line) {
				received = nil
			}
		}
		if received != nil && r.err != nil {
			recvErr.Store(r.owner, r.err)
		}
		r.finish()
	})
	var out []Problem
	for _, r := range reads {
		out = append(out, r.found...)
	}
	c := &checker{s: s}
	if pairErr == nil {
		recvErr.Range(func(_, err any) bool { pairErr = err.(error); return false })
	}
	if pairErr == nil {
		// Receivers without a mailbox of their own among the agents' directories.
		for to, ids := range want {
			if byOwner[to] == nil {
				received := receivedBack(ids)
				if err := scanBack(s.mailboxPath(to), func(line []byte) bool { return received(&mailLine{data: line}) }); err != nil {
					pairErr = err
					break
				}
			}
		}
	}
	if pairErr != nil {
		c.reportUnpaired(nil, pairErr)
	} else {
		c.reportUnpaired(s.unpairedOf(want))
	}
	return append(out, c.out...)
}

func (r *mailboxRead) size() int64 {
	if r.b == nil {
		return 0
	}
	return r.b.size
}

// onEvery calls fn(0) … fn(n-1), on every core.
func onEvery(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
