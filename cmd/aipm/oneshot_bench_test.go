package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkOneShot measures the commands a person types that read the whole project —
// `aipm task list` (piped, the table), `task list --json`, `task tree`, `doctor` — and
// `aipm task add`, on generated stores (buildScaleStore; AIPM_BENCH_ONESHOT_TASKS, default
// "200,10000,100000"), each beside its floor measured in the same run on the same store:
// reading the same files with `cat` (every task file for the listings; every file of the
// store for doctor), and for `task add` its own figure at the smallest store. A regression
// shows as a ratio in one run, whatever the machine's load. Each figure is the median of
// AIPM_BENCH_ONESHOT_RUNS runs (3; `task add` 5 times as many). AIPM_BENCH_STORE_CACHE=DIR
// keeps the generated stores between runs, as for BenchmarkScale.
//
//	go test -run='^$' -bench=OneShot -benchtime=1x -timeout=60m ./cmd/aipm
func BenchmarkOneShot(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	runs := max(scaleEnvInt(b, "AIPM_BENCH_ONESHOT_RUNS", 3), 1)
	var sizes []scaleSize
	for _, f := range strings.Split(envOr("AIPM_BENCH_ONESHOT_TASKS", "200,10000,100000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("AIPM_BENCH_ONESHOT_TASKS=%q: want task counts separated by commas", f)
		}
		sizes = append(sizes, oneShotSize(n))
	}
	tab := &scaleTable{rows: []string{
		"store: tasks / files",
		"aipm task list (piped) ms",
		"aipm task list --json ms",
		"aipm task tree ms",
		"floor: cat every task file ms",
		"task list / floor",
		"aipm doctor ms",
		"floor: cat every file of the store ms",
		"doctor / floor",
		"aipm task add p50 ms",
		"task add / at the smallest store",
	}}
	var addAt0 time.Duration
	for i, sz := range sizes {
		scaleProgress("one-shot %s store: generating", sz.Name)
		st := cachedScaleStore(b, exe, sz)
		col := fmt.Sprintf("%d tasks", st.tasks)
		tab.cols = append(tab.cols, col)
		files := strings.Count(oneShotSh(b, st.dir, "find .ai-pm -type f | grep -v '^.ai-pm/runtime/'"), "\n")
		tab.set("store: tasks / files", col, "%d / %d", st.tasks, files)
		// The first command of a copied store builds this machine's index files: not measured.
		scaleCLI(b, exe, st.dir, "task", "list", "--status", "todo")
		timed := func(n int, f func()) time.Duration {
			var ds []time.Duration
			for range n {
				t := time.Now()
				f()
				ds = append(ds, time.Since(t))
			}
			return median(ds)
		}
		cli := func(args ...string) func() { return func() { oneShotCLI(b, exe, st.dir, args...) } }
		list := timed(runs, cli("task", "list"))
		tab.set("aipm task list (piped) ms", col, "%.0f", msf(list))
		tab.set("aipm task list --json ms", col, "%.0f", msf(timed(runs, cli("task", "list", "--json"))))
		tab.set("aipm task tree ms", col, "%.0f", msf(timed(runs, cli("task", "tree"))))
		catTasks := timed(runs, func() { oneShotSh(b, st.dir, "find .ai-pm/tasks -name '*.json' -print0 | xargs -0 cat >/dev/null") })
		tab.set("floor: cat every task file ms", col, "%.0f", msf(catTasks))
		tab.set("task list / floor", col, "%.1f× (target ≤ 2× at 10k)", float64(list)/float64(catTasks))
		doctor := timed(runs, cli("doctor"))
		tab.set("aipm doctor ms", col, "%.0f", msf(doctor))
		catAll := timed(runs, func() {
			oneShotSh(b, st.dir, "find .ai-pm -type f -not -path '.ai-pm/runtime/*' -print0 | xargs -0 cat >/dev/null")
		})
		tab.set("floor: cat every file of the store ms", col, "%.0f", msf(catAll))
		tab.set("doctor / floor", col, "%.1f× (target ≤ 2× at 100k)", float64(doctor)/float64(catAll))
		n := 0
		add := timed(5*runs, func() { n++; oneShotCLI(b, exe, st.dir, "task", "add", fmt.Sprintf("one-shot probe %d", n)) })
		tab.set("aipm task add p50 ms", col, "%.1f", msf(add))
		if i == 0 {
			addAt0 = add
		}
		tab.set("task add / at the smallest store", col, "%.1f× (target ≤ 2× at 100k)", float64(add)/float64(addAt0))
		for _, l := range tab.lines() {
			fmt.Fprintln(os.Stderr, l)
		}
	}
	fmt.Println("BenchmarkOneShot figures (ms; each beside its floor, measured in the same run):")
	for _, l := range tab.lines() {
		fmt.Println(l)
	}
	b.ReportMetric(0, "ns/op")
}

// oneShotSize is the shape of a store of n tasks: the fixtures of buildScaleStore and
// background work, ten messages, a quarter of a conversation and four history events a
// task, as in BenchmarkScale (whose stores of 10,000 and 100,000 tasks it shares through
// AIPM_BENCH_STORE_CACHE). A store too small for the task with 400 sub-tasks goes without it.
func oneShotSize(n int) scaleSize {
	bigSub := 400
	fixtures := 21 + 21 + len(scaleCPUWorkers)*6
	if n < fixtures+1+bigSub {
		bigSub = 0
	} else {
		fixtures += 1 + bigSub
	}
	name := fmt.Sprintf("%dk", n/1000)
	if n < 1000 {
		name = strconv.Itoa(n)
	}
	return scaleSize{Name: name, BigSubtasks: bigSub, Background: max(n-fixtures, 0),
		Messages: n * 10, Conversations: n / 4, Events: n * 4}
}

// oneShotCLI runs `aipm args...` in dir with its output on a pipe, read to the end, as a
// command piped into another reads it.
func oneShotCLI(b *testing.B, exe, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "aipm"
	cmd.Dir = dir
	cmd.Env = wakeEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, out); err != nil {
		b.Fatal(err)
	}
	// doctor exits 1 when it finds a problem; the benchmark measures its time either way.
	if err := cmd.Wait(); err != nil && !slices.Contains(args, "doctor") {
		b.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// oneShotSh runs a shell command in dir and returns its output.
func oneShotSh(b *testing.B, dir, script string) string {
	b.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v", script, err)
	}
	return string(out)
}
