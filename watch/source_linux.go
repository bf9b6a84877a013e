package watch

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/fsnotify/fsnotify"
)

// newSource reads inotify itself on Linux. fsnotify registers its inotify descriptor
// with Go's poller, which leaves it in the process's epoll set: then every event the
// kernel queues wakes the process, even while the Watcher holds off and reads nothing.
// Thirty servers on two cores, each told of every other's writes, measured that as a
// context switch per event; a process holding an fsnotify watcher unread used 108 ms of
// CPU over 40,000 events where one holding a bare inotify descriptor used 1 ms. Here the
// descriptor is waited on with ppoll(2) only while the Watcher waits for events, so a
// hold-off costs nothing however many events queue meanwhile.
func newSource(func(string, ...any)) (source, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &inotifySource{fd: fd, wakeR: p[0], wakeW: p[1], byWD: map[int32]string{}, byPath: map[string]int32{},
		buf: make([]byte, inotifyBuf)}, nil
}

// inotifyMask is what a watch reports: what fsnotify reports as Create, Write, Remove
// and Rename. Attribute changes (Chmod) change no content and are not asked for. A watch
// is only ever of a directory, and a link in its place is not followed.
const inotifyMask = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_MODIFY | syscall.IN_DELETE |
	syscall.IN_DELETE_SELF | syscall.IN_MOVED_FROM | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW

// inotifyBuf is the read buffer: a few thousand events of names of usual length per
// read(2).
const inotifyBuf = 64 << 10

type inotifySource struct {
	fd           int
	wakeR, wakeW int // stop writes to wakeW: a ppoll in progress returns

	byWD   map[int32]string // watch descriptor → directory
	byPath map[string]int32

	buf []byte
	evs []event // what read returns, reused: a wait's events are taken before the next wait

	mu                sync.Mutex // stop may come from another goroutine than release
	stopped, released bool
}

func (s *inotifySource) add(dir string) error {
	wd, err := syscall.InotifyAddWatch(s.fd, dir, inotifyMask)
	if err != nil {
		return &fs.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	if old, ok := s.byWD[int32(wd)]; ok && old != dir {
		delete(s.byPath, old) // the same directory under a new name
	}
	s.byWD[int32(wd)] = dir
	s.byPath[dir] = int32(wd)
	return nil
}

func (s *inotifySource) remove(dir string) error {
	wd, ok := s.byPath[dir]
	if !ok {
		return errors.New("not watched")
	}
	delete(s.byPath, dir)
	delete(s.byWD, wd)
	_, err := syscall.InotifyRmWatch(s.fd, uint32(wd))
	return err
}

func (s *inotifySource) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && !s.released {
		s.stopped = true
		syscall.Write(s.wakeW, []byte{0}) // the pipe stays readable: every ppoll returns
	}
}

func (s *inotifySource) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	s.released = true
	syscall.Close(s.wakeR)
	syscall.Close(s.wakeW)
	return syscall.Close(s.fd)
}

func (s *inotifySource) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *inotifySource) wait(d time.Duration) ([]event, bool, error) {
	if s.isStopped() {
		return nil, false, errStopped
	}
	evs, overflow, err := s.read()
	if err != nil || len(evs) > 0 || overflow || d == 0 {
		return evs, overflow, err
	}
	fds := [2]pollFd{{fd: int32(s.fd), events: pollIn}, {fd: int32(s.wakeR), events: pollIn}}
	var ts *syscall.Timespec
	if d > 0 {
		t := syscall.NsecToTimespec(d.Nanoseconds())
		ts = &t
	}
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
			uintptr(unsafe.Pointer(ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			// The timeout is not brought down: a wait that runs longer only delays a
			// batch that nothing new would have changed.
			continue
		}
		if errno != 0 {
			return nil, false, &fs.PathError{Op: "ppoll", Path: "inotify", Err: errno}
		}
		break
	}
	if fds[1].revents != 0 {
		return nil, false, errStopped
	}
	return s.read()
}

// read takes the events queued now, without waiting.
func (s *inotifySource) read() (evs []event, overflow bool, err error) {
	clear(s.evs) // the last wait's names are not held on to
	evs = s.evs[:0]
	defer func() { s.evs = evs[:0] }()
	for {
		n, err := syscall.Read(s.fd, s.buf)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN || n == 0 {
			return evs, overflow, nil
		}
		if err != nil {
			return evs, overflow, &fs.PathError{Op: "read", Path: "inotify", Err: err}
		}
		evs, overflow = s.parse(s.buf[:n], evs, overflow)
		if n < len(s.buf)/2 {
			// The queue was empty: its next event, a header and at most 256 bytes of
			// name, would have fitted.
			return evs, overflow, nil
		}
	}
}

// parse appends the events of one read to evs, as fsnotify would report them, each
// saying whether its path is a directory.
func (s *inotifySource) parse(b []byte, evs []event, overflow bool) ([]event, bool) {
	const head = syscall.SizeofInotifyEvent
	for len(b) >= head {
		wd := int32(binary.NativeEndian.Uint32(b[0:]))
		mask := binary.NativeEndian.Uint32(b[4:])
		nameLen := int(binary.NativeEndian.Uint32(b[12:]))
		if head+nameLen > len(b) {
			break // the kernel writes whole events only
		}
		name := b[head : head+nameLen]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		b = b[head+nameLen:]
		if mask&syscall.IN_Q_OVERFLOW != 0 {
			overflow = true
			continue
		}
		dir, ok := s.byWD[wd]
		if mask&syscall.IN_IGNORED != 0 {
			if ok {
				delete(s.byWD, wd) // the kernel dropped the watch: its directory is gone
				if s.byPath[dir] == wd {
					delete(s.byPath, dir)
				}
			}
			continue
		}
		if !ok {
			continue // a watch removed a moment ago
		}
		if len(name) > 0 && ignored(name) {
			continue // a scratch file: dropped by the Watcher all the same, before its path is built
		}
		path := dir
		if len(name) > 0 {
			path = dir + "/" + string(name)
		}
		var op fsnotify.Op
		if mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0 {
			op |= fsnotify.Create
		}
		if mask&syscall.IN_MODIFY != 0 {
			op |= fsnotify.Write
		}
		if mask&(syscall.IN_DELETE|syscall.IN_DELETE_SELF) != 0 {
			op |= fsnotify.Remove
		}
		if mask&(syscall.IN_MOVED_FROM|syscall.IN_MOVE_SELF) != 0 {
			op |= fsnotify.Rename
		}
		if op != 0 {
			evs = append(evs, event{Event: fsnotify.Event{Name: path, Op: op}, file: mask&syscall.IN_ISDIR == 0})
		}
	}
	return evs, overflow
}

// pollFd is struct pollfd of poll(2).
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

const pollIn = 0x1
