package filestore

import (
	"os"
	"testing"
)

// Seed 004's interrupt flow ends with report_completed(result="blocked"). When the task
// was cancelled, or given to someone else, the report ends the session and leaves the
// task exactly as its new owner left it.
func TestReportOnATaskNoLongerTheSessions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *Store, id string) error
	}{
		{"cancelled", func(s *Store, id string) error {
			_, err := s.SetTaskStatus(human, id, StatusCancelled, "not needed")
			return err
		}},
		{"blocked then reassigned", func(s *Store, id string) error {
			if _, err := s.SetTaskStatus(human, id, StatusBlocked, "w2 knows it"); err != nil {
				return err
			}
			_, err := s.AssignTask(human, id, "w2")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			tk := startTask(t, s, "w1")
			res, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.change(s, tk.ID); err != nil {
				t.Fatal(err)
			}
			before, _ := s.Task(tk.ID)
			done, err := s.ReportCompleted(res.Session.ID, ResultBlocked, "half done")
			if err != nil || !done.Released || done.Task.ID != tk.ID || done.Previous != before.Status {
				t.Fatalf("report: %+v, %v", done, err)
			}
			after, _ := s.Task(tk.ID)
			if after.Version != before.Version || after.Status != before.Status || after.CompletionResult != "" || after.CompletionSummary != "" {
				t.Errorf("the report changed the task: before %+v\nafter %+v", before, after)
			}
			se, err := s.SessionByID(res.Session.ID)
			if err != nil || se.Live(s.Now()) {
				t.Errorf("session still live: %+v %v", se, err)
			}
			if ex, err := s.Execution(res.Session.ExecutionID); res.Session.ExecutionID != "" && (err != nil || ex.Status != ExecFailed || ex.Summary != "half done") {
				t.Errorf("execution record %+v %v", ex, err)
			}
		})
	}
}

// Seed 004's interrupt flow after a pause: the agent reports blocked (or failed). The
// pause only stops the work: the task stays in progress, untouched, the session ends, and
// after the resume the agent's next task session is for that task again. A success is
// finished work and is recorded, pause or not.
func TestReportWhilePausedLeavesTheTask(t *testing.T) {
	for _, result := range []string{ResultBlocked, ResultFailed} {
		t.Run(result, func(t *testing.T) {
			s := newTestStore(t)
			tk := startTask(t, s, "w1")
			res, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.SetProjectStatus(human, ProjectPaused); err != nil {
				t.Fatal(err)
			}
			before, _ := s.Task(tk.ID)
			done, err := s.ReportCompleted(res.Session.ID, result, "stopped for the pause")
			if err != nil || !done.Released || !done.Paused || done.Task.Status != StatusInProgress {
				t.Fatalf("report: %+v, %v", done, err)
			}
			after, _ := s.Task(tk.ID)
			if after.Version != before.Version || after.Status != StatusInProgress || after.CompletionResult != "" {
				t.Errorf("the report changed the task: before %+v\nafter %+v", before, after)
			}
			if se, err := s.SessionByID(res.Session.ID); err != nil || se.Live(s.Now()) {
				t.Errorf("session still live: %+v %v", se, err)
			}
			if _, err := s.SetProjectStatus(human, ProjectActive); err != nil {
				t.Fatal(err)
			}
			again, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: os.Getpid()})
			if err != nil || again.Session.Purpose != PurposeTask || again.Session.TaskID != tk.ID {
				t.Fatalf("after the resume: %+v, %v", again, err)
			}
		})
	}
	t.Run("success", func(t *testing.T) {
		s := newTestStore(t)
		tk := startTask(t, s, "w1")
		res, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetProjectStatus(human, ProjectPaused); err != nil {
			t.Fatal(err)
		}
		done, err := s.ReportCompleted(res.Session.ID, ResultSuccess, "finished just before")
		if err != nil || done.Released || done.Task.Status != StatusDone {
			t.Fatalf("report: %+v, %v", done, err)
		}
		if after, _ := s.Task(tk.ID); after.Status != StatusDone {
			t.Errorf("status %s", after.Status)
		}
	})
}
