package merge

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/internal/engine"
)

var mt0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func mtAt(min int) *time.Time {
	t := mt0.Add(time.Duration(min) * time.Minute)
	return &t
}

func mergeBaseTask() filestore.Task {
	return filestore.Task{ID: "tsk_01", ProjectID: "prj_01", Title: "Add /health", Description: "an endpoint", Status: filestore.StatusInProgress,
		Priority: "medium", AssigneeID: "be1", CreatedBy: "alice", Dependencies: []string{}, StatusChangedBy: "alice",
		StatusChangedAt: mtAt(0), Approval: filestore.ApprovalApproved, CreatedAt: mt0, UpdatedAt: mt0, Version: 3}
}

func enc(t *testing.T, v any) []byte {
	t.Helper()
	data, err := engine.EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func decTask(t *testing.T, data []byte) filestore.Task {
	t.Helper()
	var v filestore.Task
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("merged task does not decode: %v\n%s", err, data)
	}
	return v
}

// mergeBoth merges both ways round (a merge in one clone and the other, or a rebase) and
// checks that the results are the same.
func mergeBoth(t *testing.T, kind string, base, ours, theirs []byte) *Result {
	t.Helper()
	r1, err := Merge(kind, base, ours, theirs)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Merge(kind, base, theirs, ours)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Conflicts) == 0 && !bytes.Equal(r1.Data, r2.Data) {
		t.Errorf("merge is not symmetric:\n%s\nvs\n%s", r1.Data, r2.Data)
	}
	if len(r1.Conflicts) != len(r2.Conflicts) {
		t.Errorf("conflicts differ by side: %v vs %v", r1.Conflicts, r2.Conflicts)
	}
	return r1
}

func TestMergeTask(t *testing.T) {
	type edit func(*filestore.Task)
	setStatus := func(s string, min int, by string) edit {
		return func(x *filestore.Task) {
			x.Status, x.StatusChangedAt, x.StatusChangedBy = s, mtAt(min), by
			x.UpdatedAt = *mtAt(min)
			x.Version++
			if s == filestore.StatusBlocked {
				x.BlockedReason = "waiting on " + by
			}
			if filestore.Finished(s) {
				x.CompletedAt = mtAt(min)
			}
		}
	}
	tests := []struct {
		name      string
		base      func(*filestore.Task)
		ours      edit
		theirs    edit
		check     func(t *testing.T, got filestore.Task)
		conflicts []string
	}{
		{
			name:   "status on one side, priority on the other",
			ours:   setStatus(filestore.StatusBlocked, 5, "be1"),
			theirs: func(x *filestore.Task) { x.Priority, x.UpdatedAt, x.Version = "urgent", *mtAt(3), 4 },
			check: func(t *testing.T, got filestore.Task) {
				if got.Status != filestore.StatusBlocked || got.Priority != "urgent" || got.BlockedReason != "waiting on be1" {
					t.Errorf("got status %s priority %s reason %q", got.Status, got.Priority, got.BlockedReason)
				}
				if !got.UpdatedAt.Equal(*mtAt(5)) {
					t.Errorf("updated_at %v, want the later one", got.UpdatedAt)
				}
			},
		},
		{
			name:   "blocked and cancelled: the later change wins",
			ours:   setStatus(filestore.StatusBlocked, 5, "be1"),
			theirs: setStatus(filestore.StatusCancelled, 7, "alice"),
			check: func(t *testing.T, got filestore.Task) {
				if got.Status != filestore.StatusCancelled || got.StatusChangedBy != "alice" || got.BlockedReason != "" || got.CompletedAt == nil {
					t.Errorf("got %s by %s, reason %q, completed %v", got.Status, got.StatusChangedBy, got.BlockedReason, got.CompletedAt)
				}
			},
		},
		{
			name:   "blocked later than cancelled: blocked wins, with its reason",
			ours:   setStatus(filestore.StatusBlocked, 9, "be1"),
			theirs: setStatus(filestore.StatusCancelled, 7, "alice"),
			check: func(t *testing.T, got filestore.Task) {
				if got.Status != filestore.StatusBlocked || got.BlockedReason != "waiting on be1" || got.CompletedAt != nil {
					t.Errorf("got %s, reason %q, completed %v", got.Status, got.BlockedReason, got.CompletedAt)
				}
			},
		},
		{
			name:   "a status the table cannot reach (a typo in an editor) loses to one it can",
			ours:   setStatus("doing", 9, "be1"),
			theirs: setStatus(filestore.StatusTodo, 2, "alice"), // in_progress → blocked → todo
			check: func(t *testing.T, got filestore.Task) {
				if got.Status != filestore.StatusTodo {
					t.Errorf("got %s, want todo", got.Status)
				}
			},
		},
		{
			name:   "several steps on one side count as reachable",
			base:   func(x *filestore.Task) { x.Status = filestore.StatusBacklog },
			ours:   setStatus(filestore.StatusInProgress, 9, "be1"), // backlog → todo → in_progress
			theirs: setStatus(filestore.StatusCancelled, 2, "alice"),
			check: func(t *testing.T, got filestore.Task) {
				if got.Status != filestore.StatusInProgress {
					t.Errorf("got %s, want in_progress", got.Status)
				}
			},
		},
		{
			name:      "neither status reachable: a conflict",
			base:      func(x *filestore.Task) { x.Status = filestore.StatusDone },
			ours:      setStatus(filestore.StatusTodo, 9, "be1"),
			theirs:    setStatus(filestore.StatusBlocked, 2, "alice"),
			conflicts: []string{"status"},
		},
		{
			name:   "done and cancelled at the same moment: deterministic",
			ours:   setStatus(filestore.StatusDone, 5, "be1"),
			theirs: setStatus(filestore.StatusCancelled, 5, "alice"),
			check: func(t *testing.T, got filestore.Task) {
				if got.Status != filestore.StatusDone && got.Status != filestore.StatusCancelled {
					t.Errorf("got %s", got.Status)
				}
			},
		},
		{
			name:      "title changed on both sides: a conflict",
			ours:      func(x *filestore.Task) { x.Title, x.UpdatedAt = "Add /healthz", *mtAt(1) },
			theirs:    func(x *filestore.Task) { x.Title, x.UpdatedAt = "Add /ready", *mtAt(2) },
			conflicts: []string{"title"},
		},
		{
			name:   "the same title on both sides is no conflict",
			ours:   func(x *filestore.Task) { x.Title, x.UpdatedAt = "Add /healthz", *mtAt(1) },
			theirs: func(x *filestore.Task) { x.Title, x.UpdatedAt, x.Priority = "Add /healthz", *mtAt(2), "high" },
			check: func(t *testing.T, got filestore.Task) {
				if got.Title != "Add /healthz" || got.Priority != "high" {
					t.Errorf("got %q %s", got.Title, got.Priority)
				}
			},
		},
		{
			name:   "priority on both sides: the later update",
			ours:   func(x *filestore.Task) { x.Priority, x.UpdatedAt = "low", *mtAt(4) },
			theirs: func(x *filestore.Task) { x.Priority, x.UpdatedAt = "urgent", *mtAt(2) },
			check: func(t *testing.T, got filestore.Task) {
				if got.Priority != "low" {
					t.Errorf("got %s, want low", got.Priority)
				}
			},
		},
		{
			name:   "dependencies added and removed on both sides",
			base:   func(x *filestore.Task) { x.Dependencies = []string{"tsk_a", "tsk_b"} },
			ours:   func(x *filestore.Task) { x.Dependencies, x.UpdatedAt = []string{"tsk_a", "tsk_c"}, *mtAt(1) },
			theirs: func(x *filestore.Task) { x.Dependencies, x.UpdatedAt = []string{"tsk_a", "tsk_b", "tsk_d"}, *mtAt(2) },
			check: func(t *testing.T, got filestore.Task) {
				if want := []string{"tsk_a", "tsk_c", "tsk_d"}; !slices.Equal(got.Dependencies, want) {
					t.Errorf("got %v, want %v", got.Dependencies, want)
				}
			},
		},
		{
			name:   "description on one side, title on the other",
			ours:   func(x *filestore.Task) { x.Description, x.UpdatedAt = "with a JSON body", *mtAt(1) },
			theirs: func(x *filestore.Task) { x.Title, x.UpdatedAt = "Add /healthz", *mtAt(2) },
			check: func(t *testing.T, got filestore.Task) {
				if got.Description != "with a JSON body" || got.Title != "Add /healthz" {
					t.Errorf("got %q %q", got.Title, got.Description)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mergeBaseTask()
			if tt.base != nil {
				tt.base(&b)
			}
			o, th := b, b
			o.Dependencies, th.Dependencies = slices.Clone(b.Dependencies), slices.Clone(b.Dependencies)
			tt.ours(&o)
			tt.theirs(&th)
			o.Version, th.Version = b.Version+1, b.Version+2
			r := mergeBoth(t, filestore.KindTask, enc(t, &b), enc(t, &o), enc(t, &th))
			var fields []string
			for _, c := range r.Conflicts {
				fields = append(fields, c.Field)
			}
			if !slices.Equal(fields, tt.conflicts) {
				t.Fatalf("conflicts %v, want %v\n%s", fields, tt.conflicts, r.Data)
			}
			if len(r.Conflicts) > 0 {
				if !filestore.HasConflictMarkers(r.Data) {
					t.Fatalf("conflict without markers:\n%s", r.Data)
				}
				ours, theirs, ok := filestore.SplitConflict(r.Data)
				if !ok {
					t.Fatalf("markers not nested:\n%s", r.Data)
				}
				got, err := filestore.ConflictFields(ours, theirs)
				if err != nil || !slices.Equal(got, tt.conflicts) {
					t.Fatalf("ConflictFields = %v, %v; want %v\n%s", got, err, tt.conflicts, r.Data)
				}
				return
			}
			got := decTask(t, r.Data)
			if got.Version != b.Version+3 {
				t.Errorf("version %d, want %d (one more than both sides)", got.Version, b.Version+3)
			}
			if !bytes.Equal(enc(t, &got), r.Data) {
				t.Errorf("merged file is not in the store's format:\n%s", r.Data)
			}
			tt.check(t, got)
		})
	}
}

func TestMergeConversation(t *testing.T) {
	base := filestore.Conversation{ID: "cnv_01", ProjectID: "prj_01", InitiatorID: "w1", ParticipantID: "w2", Purpose: "api",
		State: filestore.ConvActive, MaxTurns: 20, Turns: 4, CreatedAt: mt0, ActivatedAt: mtAt(1), LastMessageAt: mtAt(2),
		Notified: []string{}, UpdatedAt: *mtAt(2), Version: 5}
	ours, theirs := base, base
	ours.Turns, ours.LastMessageAt, ours.UpdatedAt, ours.Version = 5, mtAt(3), *mtAt(3), 6
	theirs.State, theirs.EndedAt, theirs.EndedBy, theirs.EndReason = filestore.ConvTerminating, mtAt(4), "w2", "participant_ended"
	theirs.Turns, theirs.Notified, theirs.UpdatedAt, theirs.Version = 6, []string{"w2"}, *mtAt(4), 7
	r := mergeBoth(t, filestore.KindConversation, enc(t, &base), enc(t, &ours), enc(t, &theirs))
	if len(r.Conflicts) > 0 {
		t.Fatalf("conflicts %v", r.Conflicts)
	}
	var got filestore.Conversation
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.State != filestore.ConvTerminating || got.EndReason != "participant_ended" || got.Turns != 7 || !got.LastMessageAt.Equal(*mtAt(3)) ||
		!slices.Equal(got.Notified, []string{"w2"}) || got.Version != 8 {
		t.Errorf("got %+v", got)
	}
}

// TestMergeTurnsAddUp: each clone counted its own side's messages; equal counts on both
// sides are two messages, not one.
func TestMergeTurnsAddUp(t *testing.T) {
	base := filestore.Conversation{ID: "cnv_01", ProjectID: "prj_01", InitiatorID: "w1", ParticipantID: "w2", Purpose: "api",
		State: filestore.ConvActive, MaxTurns: 6, Turns: 4, CreatedAt: mt0, Notified: []string{}, UpdatedAt: *mtAt(2), Version: 5}
	for _, tc := range []struct{ ours, theirs, want int }{{5, 5, 6}, {5, 7, 8}, {4, 6, 6}} {
		ours, theirs := base, base
		ours.Turns, ours.UpdatedAt = tc.ours, *mtAt(3)
		theirs.Turns, theirs.UpdatedAt = tc.theirs, *mtAt(4)
		r := mergeBoth(t, filestore.KindConversation, enc(t, &base), enc(t, &ours), enc(t, &theirs))
		var got filestore.Conversation
		if err := json.Unmarshal(r.Data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Turns != tc.want {
			t.Errorf("turns 4 → %d and %d: merged %d, want %d", tc.ours, tc.theirs, got.Turns, tc.want)
		}
	}
}

func TestMergeDelegationAndExecution(t *testing.T) {
	d := filestore.Delegation{ID: "dlg_01", ProjectID: "prj_01", AgentID: "w1", TaskID: "tsk_01", TargetAgentID: "w2", Purpose: "ask",
		Status: filestore.DelegationPending, CreatedAt: mt0, UpdatedAt: mt0, Version: 1}
	o, th := d, d
	o.Status, o.ProcessedAt, o.UpdatedAt, o.Version = filestore.DelegationProcessing, mtAt(1), *mtAt(1), 2
	th.Status, th.Result, th.CompletedAt, th.UpdatedAt, th.Version = filestore.DelegationCompleted, "yes", mtAt(2), *mtAt(2), 3
	r := mergeBoth(t, filestore.KindDelegation, enc(t, &d), enc(t, &o), enc(t, &th))
	var got filestore.Delegation
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Conflicts) > 0 {
		t.Fatalf("%v %v", err, r.Conflicts)
	}
	if got.Status != filestore.DelegationCompleted || got.Result != "yes" || got.ProcessedAt == nil || got.Version != 4 {
		t.Errorf("got %+v", got)
	}

	e := filestore.Execution{ID: "exe_01", TaskID: "tsk_01", AgentID: "w1", Status: filestore.ExecRunning, StartedAt: mt0, UpdatedAt: mt0, Version: 1}
	eo, et := e, e
	code := 0
	eo.Status, eo.CompletedAt, eo.ExitCode, eo.Summary, eo.UpdatedAt, eo.Version = filestore.ExecCompleted, mtAt(5), &code, "done", *mtAt(5), 2
	et.LogPath, et.UpdatedAt, et.Version = "executions/exe_01.log", *mtAt(6), 2
	r = mergeBoth(t, filestore.KindExecution, enc(t, &e), enc(t, &eo), enc(t, &et))
	var ge filestore.Execution
	if err := json.Unmarshal(r.Data, &ge); err != nil || len(r.Conflicts) > 0 {
		t.Fatalf("%v %v", err, r.Conflicts)
	}
	if ge.Status != filestore.ExecCompleted || ge.Summary != "done" || ge.LogPath != "executions/exe_01.log" {
		t.Errorf("got %+v", ge)
	}
}

func TestMergeProjectSettings(t *testing.T) {
	p := filestore.Project{ID: "prj_01", Name: "shop", Status: filestore.ProjectActive, OwnerID: "alice", CreatedAt: mt0, UpdatedAt: mt0, Version: 1,
		Settings: filestore.Settings{Language: "en", MessageMaxChars: 4000, MaxAgentProcesses: 4}}
	o, th := p, p
	o.Settings.Language, o.UpdatedAt, o.Version = "ja", *mtAt(1), 2
	th.Settings.MaxAgentProcesses, th.Status, th.UpdatedAt, th.Version = 8, filestore.ProjectPaused, *mtAt(2), 2
	r := mergeBoth(t, filestore.KindProject, enc(t, &p), enc(t, &o), enc(t, &th))
	var got filestore.Project
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Conflicts) > 0 {
		t.Fatalf("%v %v", err, r.Conflicts)
	}
	if got.Settings.Language != "ja" || got.Settings.MaxAgentProcesses != 8 || got.Status != filestore.ProjectPaused {
		t.Errorf("got %+v", got)
	}
	o.Name, th.Name = "shop-a", "shop-b"
	r = mergeBoth(t, filestore.KindProject, enc(t, &p), enc(t, &o), enc(t, &th))
	if len(r.Conflicts) != 1 || r.Conflicts[0].Field != "name" {
		t.Fatalf("conflicts %v", r.Conflicts)
	}
	res, err := ResolveConflict(filestore.KindProject, r.Data, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res, &got); err != nil || got.Name != "shop-b" || got.Settings.Language != "ja" || got.Version != 4 {
		t.Errorf("resolved theirs: %v %+v", err, got)
	}
}

func TestMergeAgentAddedOnBothSides(t *testing.T) {
	a := filestore.Agent{ID: "be1", Name: "be1", Type: filestore.AgentAI, Hierarchy: filestore.HierarchyWorker, Role: "backend", Status: filestore.AgentActive,
		MaxParallelTasks: 1, CreatedAt: mt0, UpdatedAt: mt0, Version: 1}
	b := a
	b.Role, b.CreatedAt = "api", *mtAt(1)
	r := mergeBoth(t, filestore.KindAgent, nil, enc(t, &a), enc(t, &b))
	var fields []string
	for _, c := range r.Conflicts {
		fields = append(fields, c.Field)
	}
	if !slices.Equal(fields, []string{"created_at", "role"}) {
		t.Errorf("conflicts %v\n%s", fields, r.Data)
	}
}

func TestMergeRejectsWhatIsNotAnEntity(t *testing.T) {
	if _, err := Merge(filestore.KindTask, nil, []byte("<<<<<<< x\n"), []byte("{}")); err == nil {
		t.Error("merged a file that is not JSON")
	}
	if _, err := Merge("notes", nil, []byte("{}"), []byte("{}")); err == nil {
		t.Error("merged an unknown kind")
	}
}

func TestEntityKind(t *testing.T) {
	for p, want := range map[string]string{
		".ai-pm/tasks/tsk_01.json":            filestore.KindTask,
		"tasks/tsk_01.json":                   filestore.KindTask,
		"sub/.ai-pm/conversations/cnv_1.json": filestore.KindConversation,
		".ai-pm/delegations/dlg_1.json":       filestore.KindDelegation,
		".ai-pm/executions/exe_1.json":        filestore.KindExecution,
		".ai-pm/agents/be1/agent.json":        filestore.KindAgent,
		".ai-pm/project.json":                 filestore.KindProject,
		".ai-pm/agents/be1/chat.jsonl":        "",
		".ai-pm/executions/exe_1.log":         "",
		".ai-pm/runtime/sessions/ses_1.json":  "",
		".ai-pm/agents/be1/nested/agent.json": "",
	} {
		if got := filestore.EntityKind(p); got != want {
			t.Errorf("EntityKind(%q) = %q, want %q", p, got, want)
		}
	}
}

// Every pair of statuses the two sides can hold, from every base: the result is the
// same both ways round, and it is a status the table reaches from the base (or the
// base's own); only when neither side's is reachable is it a conflict.
func TestMergeTaskStatusAllPairs(t *testing.T) {
	for _, bs := range filestore.Statuses {
		for _, os := range filestore.Statuses {
			for _, ts := range filestore.Statuses {
				if os == bs || ts == bs || os == ts {
					continue
				}
				b := mergeBaseTask()
				b.Status = bs
				o, th := b, b
				o.Status, o.StatusChangedAt, o.UpdatedAt, o.Version = os, mtAt(3), *mtAt(3), 4
				th.Status, th.StatusChangedAt, th.UpdatedAt, th.Version = ts, mtAt(5), *mtAt(5), 4
				r := mergeBoth(t, filestore.KindTask, enc(t, &b), enc(t, &o), enc(t, &th))
				oOK, tOK := filestore.Reachable(bs, os), filestore.Reachable(bs, ts)
				if !oOK && !tOK {
					if len(r.Conflicts) != 1 || r.Conflicts[0].Field != "status" {
						t.Errorf("%s → %s | %s: conflicts %v, want status", bs, os, ts, r.Conflicts)
					}
					continue
				}
				if len(r.Conflicts) > 0 {
					t.Errorf("%s → %s | %s: conflicts %v", bs, os, ts, r.Conflicts)
					continue
				}
				got := decTask(t, r.Data)
				want := ts // the later change
				if !tOK {
					want = os
				}
				if got.Status != want {
					t.Errorf("%s → %s | %s: got %s, want %s", bs, os, ts, got.Status, want)
				}
			}
		}
	}
}

func TestMergeLease(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	base := filestore.Lease{AgentID: "w1", MachineID: "m-a", AcquiredAt: at(0), RenewedAt: at(0), ExpiresAt: at(60), UpdatedAt: at(0), Version: 1}
	renewed := base
	renewed.RenewedAt, renewed.ExpiresAt, renewed.UpdatedAt, renewed.Version = at(20), at(80), at(20), 2
	claimed := base // m-b took it over, believing it lapsed
	claimed.MachineID, claimed.AcquiredAt, claimed.RenewedAt, claimed.ExpiresAt, claimed.UpdatedAt, claimed.Version = "m-b", at(30), at(30), at(90), at(30), 2
	moved := claimed // a human moved it to m-b
	moved.AcquiredAt, moved.RenewedAt, moved.ExpiresAt, moved.MovedBy = at(10), at(10), at(70), "alice"
	movedBack := moved // and later back to m-a
	movedBack.MachineID, movedBack.AcquiredAt, movedBack.RenewedAt, movedBack.ExpiresAt = "m-a", at(15), at(15), at(75)
	merge := func(o, th filestore.Lease) filestore.Lease {
		t.Helper()
		r, err := Merge(filestore.KindLease, enc(t, &base), enc(t, &o), enc(t, &th))
		if err != nil || len(r.Conflicts) > 0 {
			t.Fatalf("merge: %v %v", err, r)
		}
		var got filestore.Lease
		if err := json.Unmarshal(r.Data, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range []struct {
		name         string
		ours, theirs filestore.Lease
		machine      string
		expires      time.Time
	}{
		// Theirs is what the remote accepted first: a later claim of ours loses to it,
		// and so does an earlier one.
		{"our claim, their renewal", claimed, renewed, "m-a", at(80)},
		{"our renewal, their claim", renewed, claimed, "m-b", at(90)},
		// A move wins against a claim or a renewal, on either side; two moves: the later.
		{"our move, their renewal", moved, renewed, "m-b", at(70)},
		{"our renewal, their move", renewed, moved, "m-b", at(70)},
		{"our move back, their move", movedBack, moved, "m-a", at(75)},
		{"our move, their move back", moved, movedBack, "m-a", at(75)},
	} {
		got := merge(c.ours, c.theirs)
		if got.MachineID != c.machine || !got.ExpiresAt.Equal(c.expires) || got.Version != 3 {
			t.Errorf("%s: merged %+v, want machine %s until %s", c.name, got, c.machine, c.expires)
		}
	}
	// A renewal keeps the move's mark, but a renewal is no move: against it, a claim
	// that the remote took first still wins.
	renewedMove := moved
	renewedMove.RenewedAt, renewedMove.ExpiresAt = at(40), at(100)
	base = moved
	retaken := claimed
	retaken.MachineID, retaken.AcquiredAt = "m-c", at(45)
	if got := merge(renewedMove, retaken); got.MachineID != "m-c" {
		t.Errorf("a renewed move beat the remote's takeover: %+v", got)
	}
	if filestore.EntityKind(".ai-pm/leases/w1.json") != filestore.KindLease {
		t.Errorf("leases are not entity files")
	}
}
