package filestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// DirName is the name of the store directory at the top of a repository.
const DirName = engine.DirName

// Options configure a Store.
type Options struct {
	// Now is the clock; nil means time.Now. Tests pass a fixed clock for stable output.
	Now func() time.Time
}

// Store is one project's .ai-pm directory. Any number of Stores, in any number of
// processes, may share a directory: every read-modify-write runs under the store lock
// (an in-process mutex plus flock on runtime/locks/store.lock), and every file is replaced
// atomically, so readers need no lock.
type Store struct {
	root string // repository root, parent of .ai-pm
	dir  string // the .ai-pm directory
	now  func() time.Time
	// eng is the store's files: the lock, the change journal, the caches of the entity
	// directories.
	eng *engine.Dir

	// The in-memory caches of the files (cache.go): disposable, rebuilt from the files.
	seq     seqState // the highest task sequence number (taskid.go)
	tasks   *engine.Cache[Task]
	tix     taskIndex
	convs   *engine.Cache[Conversation]
	cix     convIndex
	dlgs    *engine.Cache[Delegation]
	dix     dlgIndex
	agents  *engine.Cache[Agent]
	history *historyIndex
	// machine is this machine's id as the history stamps it (ThisMachine), read once.
	machineIDMu sync.Mutex
	machineID   string
	// project.json as last read, with the identity of the file it came from.
	projMu    sync.Mutex
	proj      *Project
	projStamp engine.Stamp
	// sessMemo holds live session records as last read (readSession).
	sessMu   sync.Mutex
	sessMemo map[string]memoSession
	// inboxKeys indexes each agent's notifications.jsonl by notification key.
	inboxMu   sync.Mutex
	inboxKeys map[string]*lineIndex
	// rebuilt holds each agent's chat cursor as rebuilt after its mailbox was rewritten,
	// until the cursor, the mailbox or the read log changes (mailbox.go).
	rebuiltMu sync.Mutex
	rebuilt   map[string]rebuiltCursor
	// machine is what this machine trusts for the repository, outside it (machine_trust.go).
	machine machineState
	// wrote holds, per task, the history event this process last wrote for it
	// (LastEventOf).
	wroteMu sync.Mutex
	wrote   map[string]wroteEvent
	// unreadHints holds, per agent, how far its mailbox has no unread message
	// (scanUnread).
	unreadMu    sync.Mutex
	unreadHints map[string]unreadHint
}

// ErrNoStore is returned by Find when no .ai-pm directory is found.
var ErrNoStore = errors.New("no .ai-pm directory here or in any parent (run `aipm init` at the repository root)")

// Find walks up from start to the first directory holding .ai-pm/project.json, like Git
// looks for .git, and returns that repository root.
func Find(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		if _, err := engine.Lstat(filepath.Join(dir, DirName, "project.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoStore
		}
		dir = parent
	}
}

// Open opens the store of the repository at root. It removes temp files that crashed
// writers left behind.
func Open(root string, opts Options) (*Store, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := newStore(root, opts)
	if _, err := engine.Lstat(s.path("project.json")); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", root, ErrNoStore)
		}
		return nil, err
	}
	s.sweepTemp()
	return s, nil
}

// sweepTemp runs cleanTemp at most once a minute across processes: it walks the whole
// store, which at thousands of tasks costs more than a command or a server start should.
// A temp file is only removed once a minute old anyway. The time of the last sweep is the
// modification time of runtime/locks/temp-swept.lock.
func (s *Store) sweepTemp() {
	marker := s.path("runtime", "locks", "temp-swept.lock")
	// A marker dated in the future (a clock set back, a hand-made file) is stale, not
	// fresh: otherwise the temp files would never be cleaned again.
	if fi, err := engine.Lstat(marker); err == nil {
		if age := s.Now().Sub(fi.ModTime()); age >= 0 && age < time.Minute {
			return
		}
	}
	engine.CleanTemp(s.dir, s.Now())
	s.adoptLegacyRuntime()
	if f, err := engine.Open(marker, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644, 0); err == nil {
		f.Close()
	}
}

// adoptLegacyRuntime moves what an earlier version left in runtime/ itself to
// JournalDir: a delivery record still naming a send (so that the next send or reader
// finishes it) unless a newer one is there, and the old journal is removed (readers that
// find a new journal re-check their caches by file identity).
func (s *Store) adoptLegacyRuntime() {
	oldJournal, oldDelivery := s.path(legacyRuntimeFiles[0]), s.path(legacyRuntimeFiles[1])
	engine.Remove(oldJournal)
	fi, err := engine.Lstat(oldDelivery)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	s.locked(func() error {
		if cur, err := engine.Lstat(s.deliveryPath()); err == nil && cur.Size() > 0 {
			return nil // a send of this version is under way or unfinished: the old one waits for doctor
		}
		if fi.Size() == 0 {
			return engine.Remove(oldDelivery)
		}
		if err := EnsureDir(s.path(JournalDir)); err != nil {
			return err
		}
		root, rel, _, err := engine.StoreRoot(oldDelivery, false)
		if err != nil {
			return err
		}
		return root.Rename(rel, filepath.Join(filepath.FromSlash(JournalDir), "delivery.json"))
	})
}

func newStore(root string, opts Options) *Store {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Store{root: root, dir: filepath.Join(root, DirName), now: now}
	s.eng = engine.NewDir(s.dir)
	s.eng.OnJournal = func(rel string, before, after int64, timed bool) {
		if strings.HasPrefix(rel, "tasks/") {
			s.seq.journaled(rel, before, after, timed)
		}
	}
	s.eng.OnMarkAll = s.seq.forget
	s.history = newHistoryIndex(filepath.Join(s.dir, filepath.FromSlash(EventsIndexPath)))
	s.inboxKeys = map[string]*lineIndex{}
	s.tasks = newTaskCache(s)
	s.convs = newConvCache(s)
	s.dlgs = newDlgCache(s)
	s.agents = engine.NewCache(s.eng, "agents", isAgentID, s.readAgent)
	s.agents.Leaf = "agent.json"
	return s
}

// Root returns the repository root (the agents' working directory).
func (s *Store) Root() string { return s.root }

// Dir returns the .ai-pm directory.
func (s *Store) Dir() string { return s.dir }

// Now returns the store clock's current time in UTC, truncated to microseconds so that it
// survives a JSON round trip unchanged.
func (s *Store) Now() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Rel returns path relative to the repository root, with forward slashes, for messages.
func (s *Store) Rel(path string) string {
	if r, err := filepath.Rel(s.root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

func (s *Store) path(elem ...string) string { return s.eng.Path(elem...) }

// locked runs fn holding the store lock (Dir.locked).
func (s *Store) locked(fn func() error) error { return s.eng.Locked(fn) }

// OneShot: see Dir.OneShot.
func (s *Store) OneShot() { s.eng.OneShot() }

// Watched: see Dir.Watched.
func (s *Store) Watched() { s.eng.Watched() }

// Changed: see Dir.Changed.
func (s *Store) Changed(paths ...string) { s.eng.Changed(paths...) }

// Warm loads every cache now, so that the first call a server answers does not pay for
// reading the store. The coordinator and `aipm mcp` start it in the background.
func (s *Store) Warm() {
	s.tasks.With(func() {})
	s.agents.With(func() {})
	s.convs.With(func() {})
	s.dlgs.With(func() {})
}

// legacyRuntimeFiles are where earlier versions kept the journal and the delivery record,
// in runtime/ itself (adoptLegacyRuntime).
var legacyRuntimeFiles = [...]string{"runtime/changes.log", "runtime/delivery.json"}
