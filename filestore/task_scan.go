package filestore

import (
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// TaskEntry is what the index holds of a task: where it stands, and when its file last
// changed. A command that lists the whole project chooses and lays out what it prints
// from these, then reads the files of what it prints (ReadTasks).
type TaskEntry struct {
	TaskRef
	Dependencies []string
	// Changed is the modification time of the task's file as the index last saw it.
	Changed time.Time
}

// TaskEntries returns the index entries of the readable tasks matching f, by id (creation
// order), without reading a file: one pass over what the index holds.
func (s *Store) TaskEntries(f TaskFilter) ([]TaskEntry, error) {
	var out []TaskEntry
	err := s.tasks.With(func() {
		c := s.tasks
		add := func(id string, k []string, st engine.Stamp) {
			if k == nil || !f.matchKeys(k) {
				return
			}
			out = append(out, TaskEntry{TaskRef: TaskRef{ID: id, ParentID: k[tkParent], AssigneeID: k[tkAssignee], Status: k[tkStatus]},
				Dependencies: slices.Clone(k[tkDeps:]), Changed: time.Unix(0, st.Mtime)})
		}
		if len(f.constraints()) > 0 || f.Unfinished {
			for id := range s.candidatesLocked(f) {
				if k, st, ok := c.Entry(id); ok {
					add(id, k, st)
				}
			}
		} else {
			c.EachEntry(add)
		}
	})
	slices.SortFunc(out, func(a, b TaskEntry) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

// ReadTasks calls fn with each task of ids, in the order of ids: a task held in memory
// (unfinished work) is copied from there, the others are read from their files, several
// at once and a little ahead of fn, and not kept. A command that prints the whole project
// reads each file once and prints as it reads. A task whose file is gone or cannot be
// read is skipped (`aipm doctor` names it). ReadTasks stops at fn's first error and
// returns it.
func (s *Store) ReadTasks(ids []string, fn func(*Task) error) error {
	held := make([]*Task, len(ids))
	err := s.tasks.With(func() {
		c := s.tasks
		for i, id := range ids {
			if c.HeldInFull(id) {
				if t := c.Get(id); t != nil {
					held[i] = cloneTask(t)
				}
			}
		}
	})
	if err != nil {
		return err
	}
	// Each file is read by one of a few workers into its own slot; fn takes the slots in
	// order. window bounds how far the reading runs ahead of fn.
	type slot struct {
		i  int
		ch chan *Task
	}
	const window = 256
	workers := min(max(runtime.GOMAXPROCS(0), 2), 8)
	order := make(chan slot, window)
	jobs := make(chan slot, window)
	stop := make(chan struct{})
	go func() {
		defer close(order)
		defer close(jobs)
		for i, id := range ids {
			if held[i] != nil || ValidateEntityID(PrefixTask, id) != nil {
				continue
			}
			sl := slot{i, make(chan *Task, 1)}
			select {
			case order <- sl:
			case <-stop:
				return
			}
			jobs <- sl
		}
	}()
	// tasks/ is opened and checked once (no link on the way, as every read checks), so
	// that a file costs what `cat` pays for it: an open, a stat and a read.
	dir, _, derr := engine.StoreDir(s.path("tasks"), false)
	read := func(id string) (*Task, error) {
		if derr != nil || dir == nil {
			return s.readTask(id)
		}
		return s.readTaskIn(dir, id)
	}
	for range workers {
		go func() {
			for sl := range jobs {
				t, err := read(ids[sl.i])
				if err != nil {
					t = nil
				}
				sl.ch <- t
			}
		}()
	}
	defer close(stop)
	next := 0
	emit := func(upto int) error {
		for ; next < upto; next++ {
			if held[next] != nil {
				if err := fn(held[next]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for sl := range order {
		if err := emit(sl.i); err != nil {
			return err
		}
		next = sl.i + 1
		if t := <-sl.ch; t != nil {
			if err := fn(t); err != nil {
				return err
			}
		}
	}
	return emit(len(ids))
}

// readTaskIn is readTask through dir, the store's tasks/ opened as an os.Root.
func (s *Store) readTaskIn(dir *os.Root, id string) (*Task, error) {
	data, ok := readIn(dir, id+".json")
	if !ok {
		return s.readTask(id) // for readTask's own error (a link, a missing file)
	}
	var t Task
	if err := s.decodeJSON(s.taskPath(id), data, &t); err != nil {
		return nil, err
	}
	t.normalize()
	t.ID = id // the file name is the task's identity (readTask)
	return &t, nil
}

// readIn reads the regular file name in dir (an os.Root of a store directory, checked
// when opened: engine.StoreDir) without following a link: an open, a stat and a read, as
// `cat` pays. ok is false for anything engine.ReadFile would refuse or fail on, which the
// caller then asks for its error.
func readIn(dir *os.Root, name string) (data []byte, ok bool) {
	f, err := dir.OpenFile(name, os.O_RDONLY|engine.NoFollow, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > engine.MaxEntityFile {
		return nil, false
	}
	data = make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, true
		}
		if err != nil {
			return nil, false
		}
		if len(data) == cap(data) {
			if len(data) > engine.MaxEntityFile {
				return nil, false
			}
			data = append(data, 0)[:len(data)] // it grew meanwhile
		}
	}
}
