package land

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// BenchmarkLanding lands one task after another with a trivial check (`true`), in a store
// that already holds 1,000 other tasks: each task starts on its own worktree and branch,
// writes a file and is reported done; the queue commits, checks and fast-forwards main. It
// reports tasks landed per minute (the whole cycle) and the report-to-landed time (p50,
// p99). Beside it, bare-git runs the same steps with git alone — worktree add, commit,
// `sh -c true`, merge --ff-only into the main worktree, worktree remove, branch -D — as
// the floor of what landing costs on this machine.
func BenchmarkLanding(b *testing.B) {
	b.Run("aipm", func(b *testing.B) {
		s, q := newRepo(b, "true")
		for i := range 1000 {
			if _, err := s.CreateTask(owner, filestore.NewTask{Title: fmt.Sprintf("other %d", i), Status: filestore.StatusTodo}); err != nil {
				b.Fatal(err)
			}
		}
		var lat []time.Duration
		b.ResetTimer()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			t, done := work(b, s, q, fmt.Sprintf("Task %d", i), fmt.Sprintf("f%d.txt", i), "x\n")
			if did, _, err := q.Step(nil); err != nil || !did {
				b.Fatalf("Step: %v, %v", did, err)
			}
			lat = append(lat, time.Since(done))
			if t, _ = s.Task(t.ID); t.Landing.State != filestore.LandLanded {
				b.Fatalf("task %s: landing %s", t.ID, t.Landing.State)
			}
		}
		report(b, time.Since(start), lat)
	})
	b.Run("bare-git", func(b *testing.B) {
		s, _ := newRepo(b, "")
		root := s.Root()
		g := git{dir: root}
		var lat []time.Duration
		b.ResetTimer()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			wt := filepath.Join(filepath.Dir(root), fmt.Sprintf("wt%d", i))
			br := fmt.Sprintf("b%d", i)
			if _, err := g.run("worktree", "add", "-q", "-b", br, wt, "main"); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wt, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			done := time.Now()
			w := git{dir: wt}
			for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "Task"}} {
				if _, err := w.run(args...); err != nil {
					b.Fatal(err)
				}
			}
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
			for _, args := range [][]string{{"merge", "-q", "--ff-only", br}, {"worktree", "remove", "--force", wt}, {"branch", "-q", "-D", br}} {
				if _, err := g.run(args...); err != nil {
					b.Fatal(err)
				}
			}
			lat = append(lat, time.Since(done))
		}
		report(b, time.Since(start), lat)
	})
}

func report(b *testing.B, total time.Duration, lat []time.Duration) {
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(lat))/total.Minutes(), "tasks/min")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.Logf("%d tasks: %.0f landed a minute; report to landed p50 %.1f ms, p99 %.1f ms", len(lat), float64(len(lat))/total.Minutes(), q(0.5), q(0.99))
}
