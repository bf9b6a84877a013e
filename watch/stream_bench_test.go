package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// streamWriterEnv makes the test binary the writer of BenchmarkStream:
// "<dir> <writes> <pace in ns> <files>" (see streamWriter).
const streamWriterEnv = "WATCH_STREAM_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(streamWriterEnv); spec != "" {
		if err := streamWriter(spec); err != nil {
			fmt.Fprintln(os.Stderr, "stream writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// streamWriter is another process writing the way the store's writers do:
// it creates "ready", waits for a byte on stdin, appends one line to each of
// files files in turn, one append every pace (as fast as it can if pace is
// zero), and then creates "done".
func streamWriter(spec string) error {
	var dir string
	var n, files int
	var pace int64
	if _, err := fmt.Sscan(spec, &dir, &n, &pace, &files); err != nil {
		return fmt.Errorf("%s=%q: %w", streamWriterEnv, spec, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
		return err
	}
	start := time.Now()
	line := []byte("{\"n\":1}\n")
	for i := range n {
		if pace > 0 {
			if d := time.Until(start.Add(time.Duration(int64(i) * pace))); d > 0 {
				time.Sleep(d)
			}
		}
		f, err := os.OpenFile(filepath.Join(dir, "f"+strconv.Itoa(i%files)+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(line)
		f.Close()
		if err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
}

// BenchmarkStream measures what a stream of another process's writes costs
// the process that watches them, with spacing on (the default) and off. One
// op is one append by the writer, a child process, to one of 64 files in
// turn, so that the kernel merges no events; the writer paces its appends
// (4,000 a second, what thirty servers writing at once give every other
// one) or writes as fast as it can.
//
// Reported: cpu-µs/write, the watching process's CPU (user + system, all
// goroutines) per append, from the writer's start to its last append
// delivered; batches/1k-writes, how often fn was called, each call being a
// wake-up of the consumer (a Hub, the caches, notifications); and
// paths/batch. ns/op is the writer's pace.
//
//	go test -run='^$' -bench=Stream -benchtime=8000x ./watch
func BenchmarkStream(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, pace := range []time.Duration{250 * time.Microsecond, 0} {
		for _, sc := range []struct {
			name    string
			spacing time.Duration
		}{{"spacing=default", 0}, {"spacing=off", -1}} {
			b.Run(fmt.Sprintf("pace=%v/%s", pace, sc.name), func(b *testing.B) {
				benchStream(b, exe, pace, sc.spacing)
			})
		}
	}
}

func benchStream(b *testing.B, exe string, pace, spacing time.Duration) {
	const files = 64
	root := b.TempDir()
	w, err := New(root, Options{Spacing: spacing})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	var batches, paths int
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.Run(ctx, func(cs []Change) {
			batches++
			paths += len(cs)
			for _, c := range cs {
				switch c.Path {
				case "ready":
					close(ready)
				case "done":
					close(done)
				}
			}
		})
	}()
	defer func() { cancel(); <-stopped }()

	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d", streamWriterEnv, root, b.N, pace.Nanoseconds(), files))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	var werr error // set before exited is closed
	go func() { werr = cmd.Wait(); close(exited) }()
	defer func() {
		stdin.Close()
		<-exited
		if werr != nil {
			b.Errorf("writer: %v", werr)
		}
	}()
	wait := func(ch chan struct{}, what string) {
		timeout := time.After(time.Minute)
		select {
		case <-ch:
			return
		case <-exited:
			if werr != nil {
				b.Fatalf("writer failed before %s was delivered: %v", what, werr)
			}
		case <-timeout:
			b.Fatalf("%s not delivered within a minute", what)
		}
		// The writer finished: its last file is on the way.
		select {
		case <-ch:
		case <-timeout:
			b.Fatalf("%s not delivered within a minute", what)
		}
	}
	wait(ready, "the writer's ready file")

	// batches and paths are only written by Run's goroutine, which the
	// close of done orders before the reads below.
	b0, p0 := batches, paths
	cpu0 := processCPU(b)
	b.ResetTimer()
	if _, err := stdin.Write([]byte{1}); err != nil {
		b.Fatal(err)
	}
	wait(done, "the writer's done file")
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	nb, np := batches-b0, paths-p0

	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/write")
	b.ReportMetric(float64(nb)*1000/float64(b.N), "batches/1k-writes")
	b.ReportMetric(float64(np)/float64(nb), "paths/batch")
}

// processCPU is this process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
