package watch

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// A Watcher holding off between batches is not woken by the events that queue
// meanwhile: another process's 2,000 file writes (4,000 events) cost the watching
// process next to no context switch. Through fsnotify, whose descriptor stays in the
// process's epoll set, the same writes woke it hundreds of times.
func TestHoldOffIsNotWoken(t *testing.T) {
	for name, open := range sources {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			ch := startWith(t, root, Options{Spacing: time.Minute}, open)
			// The burst allowance goes out at once; the hold-off follows it.
			for i := range spacingBurst {
				write(t, filepath.Join(root, "b"+strconv.Itoa(i)), "")
				collect(t, ch, present("b"+strconv.Itoa(i)))
			}
			before := contextSwitches(t)
			writer := exec.Command("sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo x > f$((i % 50)); i=$((i+1)); done`)
			writer.Dir = root
			if out, err := writer.CombinedOutput(); err != nil {
				t.Fatalf("writer: %v: %s", err, out)
			}
			woken := contextSwitches(t) - before
			t.Logf("%s: %d context switches while 2,000 writes queued", name, woken)
			if name == "default" && woken > 100 {
				t.Errorf("the watching process switched %d times while it held off; want next to none", woken)
			}
			select {
			case cs := <-ch:
				t.Fatalf("a batch during the hold-off: %+v", cs)
			default:
			}
		})
	}
}

// contextSwitches is the sum of this process's threads' context switches.
func contextSwitches(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	n := 0
	for _, task := range tasks {
		data, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}

// inotify says whether each event's path is a directory: a created or moved-in file is
// known to be one without a stat, a created or moved-in directory is not taken for a file.
func TestInotifyTellsFilesFromDirectories(t *testing.T) {
	root := t.TempDir()
	src, err := newSource(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer src.release()
	if err := src.add(root); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "f.json"), "{}")
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	write(t, filepath.Join(outside, "moved.json"), "{}")
	if err := os.Mkdir(filepath.Join(outside, "moveddir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"moved.json", "moveddir"} {
		if err := os.Rename(filepath.Join(outside, name), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{"f.json": true, "d": false, "moved.json": true, "moveddir": false}
	got := map[string]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		evs, _, err := src.wait(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Op.Has(fsnotify.Create) {
				got[filepath.Base(ev.Name)] = ev.file
			}
		}
	}
	for name, file := range want {
		if f, ok := got[name]; !ok || f != file {
			t.Errorf("%s: created, file=%v (seen %v); want file=%v", name, f, ok, file)
		}
	}
}

// The inotify source drops a scratch file's events as it parses them, without building
// a path or keeping an event: an atomic write's temporary file makes three of its four
// events, in every process that watches.
func TestInotifyDropsScratchFilesUnbuilt(t *testing.T) {
	s := &inotifySource{byWD: map[int32]string{1: "/store/tasks"}, byPath: map[string]int32{"/store/tasks": 1}}
	var buf []byte
	put := func(mask uint32, name string) {
		padded := len(name) + 1
		padded += (16 - padded%16) % 16
		var h [16]byte
		binary.NativeEndian.PutUint32(h[0:], 1)
		binary.NativeEndian.PutUint32(h[4:], mask)
		binary.NativeEndian.PutUint32(h[12:], uint32(padded))
		buf = append(buf, h[:]...)
		buf = append(buf, name...)
		buf = append(buf, make([]byte, padded-len(name))...)
	}
	for _, name := range []string{".T-1.json.42.tmp", "store.lock", "notes.md~", ".#notes.md", "4913"} {
		put(syscall.IN_CREATE, name)
		put(syscall.IN_MODIFY, name)
		put(syscall.IN_MOVED_FROM, name)
	}
	scratchOnly := slices.Clone(buf)
	put(syscall.IN_MOVED_TO, "T-1.json")

	evs, overflow := s.parse(buf, nil, false)
	if overflow || len(evs) != 1 || evs[0].Name != "/store/tasks/T-1.json" || !evs[0].Has(fsnotify.Create) {
		t.Fatalf("parsed %+v (overflow %v); want only the rename into /store/tasks/T-1.json", evs, overflow)
	}
	evs = make([]event, 0, 8)
	if n := testing.AllocsPerRun(100, func() { evs, _ = s.parse(scratchOnly, evs[:0], false) }); n != 0 || len(evs) != 0 {
		t.Errorf("scratch files' events: %v allocations and %d events per parse; want none", n, len(evs))
	}
}

// ignored says the same of a name as a string and as the kernel's bytes.
func TestIgnoredBytesAsStrings(t *testing.T) {
	for _, name := range []string{".a.json.1.tmp", "tmp", "a~", "~", ".#a", ".#", "#a", "a.swp", "a.swx", "4913", "49130",
		"x.lock", "lock", "T-1.json", "", "a.tm"} {
		if got, want := ignored([]byte(name)), ignored(name); got != want {
			t.Errorf("ignored(%q): %v as bytes, %v as a string", name, got, want)
		}
	}
	if !ignored(".a.json.1.tmp") || !ignored("x.lock") || ignored("T-1.json") || ignored("tmp") {
		t.Error("ignored does not tell scratch names from state")
	}
}
