package filestore

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// ReadTasks gives what Tasks gives, in the order asked, whether a task is held in memory
// (open work) or read from its file (finished work in the index file's cold part); a
// missing file is skipped, and fn's error stops it. TaskEntries lists the same tasks from
// the index alone.
func TestReadTasksAsTasks(t *testing.T) {
	s := newTestStore(t)
	var ids []string
	for i := range 30 {
		tk := mustTask(t, s, NewTask{Title: strings.Repeat("x", i+1), AssigneeID: "w1"})
		if i%3 != 0 {
			finish(t, s, tk.ID)
		}
		ids = append(ids, tk.ID)
	}
	titles(t, s, TaskFilter{}) // leaves the index file
	if err := os.Remove(s.taskPath(ids[4])); err != nil {
		t.Fatal(err)
	}
	cli := reopen(t, s)
	cli.OneShot()
	entries, err := cli.TaskEntries(TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range entries {
		listed = append(listed, e.ID)
		if e.Changed.IsZero() {
			t.Errorf("%s: no modification time", e.ID)
		}
	}
	want := slices.Delete(slices.Clone(ids), 4, 5)
	if !slices.Equal(listed, want) {
		t.Errorf("TaskEntries: %v, want %v", listed, want)
	}
	asked := append(slices.Clone(ids), "tsk_nothere")
	slices.Reverse(asked)
	var got []string
	if err := cli.ReadTasks(asked, func(tk *Task) error { got = append(got, tk.ID+":"+tk.Title+":"+tk.Status); return nil }); err != nil {
		t.Fatal(err)
	}
	all, err := reopen(t, s).Tasks(TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var exp []string
	for _, tk := range slices.Backward(all) {
		exp = append(exp, tk.ID+":"+tk.Title+":"+tk.Status)
	}
	if !slices.Equal(got, exp) {
		t.Errorf("ReadTasks:\n%v\nwant\n%v", got, exp)
	}
	stop := errors.New("stop")
	n := 0
	if err := cli.ReadTasks(ids, func(*Task) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("ReadTasks with fn failing: %v after %d calls", err, n)
	}
}
