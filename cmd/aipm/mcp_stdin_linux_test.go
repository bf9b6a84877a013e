package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A stdin with a path is refused when another user could open it for writing: a named
// pipe or file that group or others may write, or that another user owns; a pipe without
// a name, a private named pipe, a private file and /dev/null are served.
func TestCheckStdin(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string, mode os.FileMode) *os.File {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0) // read and write: opening does not wait for a writer
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	file := func(name string, mode os.FileMode) *os.File {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()

	for _, c := range []struct {
		name string
		f    *os.File
		want string // "" served; else in the refusal
	}{
		{"a pipe without a name", r, ""},
		{"/dev/null", null, ""},
		{"a private named pipe", fifo("private", 0o600), ""},
		{"a named pipe others may write", fifo("open", 0o622), "may be written by other users (mode 0622)"},
		{"a named pipe the group may write", fifo("group", 0o660), "mode 0660"},
		{"a private file", file("requests", 0o644), ""},
		{"a file others may write", file("shared", 0o646), "a file, " + filepath.Join(dir, "shared")},
	} {
		err := checkStdin(c.f)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it served", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "chmod go-w")):
			t.Errorf("%s: %v, want a refusal saying %q and what to do", c.name, err, c.want)
		}
	}
	if os.Getuid() == 0 {
		f := fifo("theirs", 0o600)
		if err := os.Chown(f.Name(), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := checkStdin(f); err == nil || !strings.Contains(err.Error(), "owned by another user (uid 65534)") {
			t.Errorf("a named pipe of another user: %v, want a refusal", err)
		}
	}
}

// `aipm mcp` started as an agent CLI starts it, with a pipe: another process of the same
// user cannot open that pipe anew through /proc/<pid>/fd/0 and write a request into the
// server's session; the server answers only what came through the pipe. (Run as root,
// the server and the other process both run as nobody: root may open anything.)
func TestMCPStdinNotOpenedThroughProc(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	bin, err := exec.LookPath("aipm")
	if err != nil {
		t.Skip("aipm is not on PATH (TestMain puts it there)")
	}
	top, err := os.MkdirTemp("", "aipm-stdin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Getuid() == 0 {
		// Another user runs everything here: a copy of the binary it can execute, a
		// repository and home of its own.
		const nobody = 65534
		attr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(top, "bin", "aipm")
		os.MkdirAll(filepath.Dir(bin), 0o755)
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(top, 0o755)
		if err := os.Chown(top, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	repo := filepath.Join(top, "repo")
	env := append(os.Environ(), "AIPM_USER=", "AIPM_ROOT="+repo, "HOME="+top, "XDG_CONFIG_HOME="+filepath.Join(top, "config"), "AIPM="+bin)
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env, cmd.SysProcAttr = top, env, attr
		return cmd
	}
	if out, err := command("/bin/sh", "-c", `mkdir repo && cd repo && "$AIPM" init --owner alice`).CombinedOutput(); err != nil {
		t.Fatalf("aipm init: %v\n%s", err, out)
	}

	// The shell makes the pipe, as an agent CLI does, and says the server's pid.
	// (An asynchronous list reads /dev/null unless told otherwise: cat reads the test's pipe.)
	srv := command("/bin/sh", "-c", `exec 3<&0; cat <&3 | "$AIPM" mcp & echo "pid $!"; wait`)
	in, err := srv.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	out := bufio.NewReader(outPipe)
	line, err := out.ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil || perr != nil {
		t.Fatalf("the server's pid: %q %v", line, err)
	}
	// answer reads the server's answers until the one to id, and returns the ids seen.
	answer := func(id int) []string {
		t.Helper()
		var seen []string
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for the answer to %d: %v (seen %v)\n%s", id, err, seen, stderr.String())
			}
			for _, f := range strings.Split(l, ",") {
				if v, ok := strings.CutPrefix(f, `"id":`); ok {
					seen = append(seen, v)
				}
			}
			if strings.Contains(l, fmt.Sprintf(`"id":%d,`, id)) || strings.Contains(l, fmt.Sprintf(`"id":%d}`, id)) {
				return seen
			}
		}
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	answer(1) // the server is up: it made itself what it is before it read a line

	// Another process of the server's user writes a request of its own into the server's
	// stdin through /proc.
	inject := command("/bin/sh", "-c", fmt.Sprintf(`printf '%%s\n' '{"jsonrpc":"2.0","id":99,"method":"ping"}' > /proc/%d/fd/0`, pid))
	injected, ierr := inject.CombinedOutput()
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	seen := answer(2)
	if ierr == nil {
		t.Errorf("another process opened /proc/%d/fd/0 and wrote to it (answers seen: %v)", pid, seen)
	} else if !strings.Contains(string(injected), "Permission denied") {
		t.Errorf("writing to /proc/%d/fd/0 failed otherwise than refused: %v: %s", pid, ierr, injected)
	}
	for _, id := range seen {
		if id == "99" {
			t.Errorf("the server answered the request written through /proc: %v", seen)
		}
	}
}

// The refusal reaches the person who started the server: `aipm mcp` with a named pipe
// that others may write as its stdin says so and stops before it reads a request.
func TestMCPRefusesSharedStdin(t *testing.T) {
	if _, err := exec.LookPath("aipm"); err != nil {
		t.Skip("aipm is not on PATH (TestMain puts it there)")
	}
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	os.MkdirAll(repo, 0o755)
	env := append(os.Environ(), "AIPM_USER=", "AIPM_ROOT="+repo, "HOME="+top, "XDG_CONFIG_HOME="+filepath.Join(top, "config"))
	init := exec.Command("aipm", "init", "--owner", "alice")
	init.Dir, init.Env = repo, env
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("aipm init: %v\n%s", err, out)
	}
	path := filepath.Join(top, "requests")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	fifo, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fifo.Close()
	io.WriteString(fifo, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	// The fifo stays open for writing here: a server that read it would not end, and is
	// stopped after a while.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "aipm", "mcp")
	cmd.Dir, cmd.Env, cmd.Stdin = repo, env, fifo
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err == nil || !strings.Contains(string(out), "refused to serve: standard input is a named pipe, "+path+", that may be written by other users (mode 0666)") {
		t.Fatalf("aipm mcp on a named pipe others may write: %v\n%s", err, out)
	}
}
