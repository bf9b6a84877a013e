package ui

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// Queue is the merge queue of the clone around the store (cmd/aipm wires land.Queue; the
// page must not import it): what a task's code changes, and the two ways out of a landing
// that waits for a person, the calls `aipm land retry|abandon` make.
type Queue interface {
	// Diff is git's patch of what the task's code changes, or its --stat summary.
	Diff(t *filestore.Task, stat bool) (string, error)
	// Retry puts a landing that failed back in the queue for one more attempt.
	Retry(actor filestore.Actor, id string) (*filestore.Task, error)
	// Abandon gives a task's code up: it never lands.
	Abandon(actor filestore.Actor, id string) (*filestore.Task, error)
}

// landingRow is a task's landing as a card shows it.
type landingRow struct {
	State string `json:"state"`
	// Commit is the landed commit, short, as `aipm task list` shows it.
	Commit   string `json:"commit,omitempty"`
	NeedsYou bool   `json:"needs_you,omitempty"`
}

func landingOf(l *filestore.Landing) *landingRow {
	if l == nil {
		return nil
	}
	r := &landingRow{State: l.State, Commit: l.LandedCommit, NeedsYou: l.NeedsHuman}
	if len(r.Commit) > 10 {
		r.Commit = r.Commit[:10]
	}
	return r
}

// landingNeedsYou is the "Needs you" item of a task whose code did not land and waits
// for a person, or false. A failed attempt past the limit marks both the task that failed
// and the original it reworks; the original, which handed its code on to a rework, is
// left out: the rework's item is the one to act on (its worktree holds the code).
func landingNeedsYou(rows map[string]taskRow, t taskRow, machine string) (attention, bool) {
	if t.Landing == nil || !t.Landing.NeedsYou || t.landReworkID != "" {
		return attention{}, false
	}
	attempts := t.landAttempts
	if root, ok := rows[t.reworkOf]; ok && t.reworkOf != "" {
		attempts = root.landAttempts
	}
	text := "not landed: " + t.Title + " — " + strings.ReplaceAll(t.Landing.State, "_", " ")
	if attempts > 0 {
		text += " after " + plural(attempts, "attempt")
	}
	if first, _, _ := strings.Cut(strings.TrimSpace(t.landDetail), "\n"); first != "" {
		text += ": " + clip(strings.TrimSuffix(first, "; the end of its output:"), 160)
	}
	a := attention{Kind: "landing", TaskID: t.ID, AgentID: t.AssigneeID, Text: text + "; retry or abandon it", At: t.updatedAt}
	if machine != "" && t.landMachine != "" && t.landMachine != machine {
		a.Machine = t.landMachine
		a.Text = text + "; its worktree is on machine " + t.landMachine + ": retry it there (aipm land retry), or abandon it"
	}
	return a, true
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// diffMax bounds each of a diff's texts the page gets: the rest is for git itself.
const diffMax = 256 << 10

// diffAnswer is what GET /api/tasks/{id}/diff answers: what the task's code changes.
type diffAnswer struct {
	Stat string `json:"stat"`
	Diff string `json:"diff"`
	// Bytes is the patch's whole size; Truncated says Diff holds its first diffMax bytes
	// only (cut at a line's end).
	Bytes     int  `json:"bytes"`
	Truncated bool `json:"truncated"`
}

// getDiff answers what a task's code changes: git's summary and the patch, from its
// landed commit once it landed, else from its branch and worktree.
func (s *Server) getDiff(w http.ResponseWriter, r *http.Request) {
	t, err := s.o.Store.Task(r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	if s.o.Queue == nil {
		writeError(w, http.StatusNotFound, "no_git", "the project is not in a Git repository: tasks have no code of their own to show", "")
		return
	}
	var out diffAnswer
	if t.Landing != nil {
		stat, err := s.o.Queue.Diff(t, true)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "git", "git diff --stat: "+err.Error(), "")
			return
		}
		patch, err := s.o.Queue.Diff(t, false)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "git", "git diff: "+err.Error(), "")
			return
		}
		out.Stat, _ = cut(stat, diffMax)
		out.Bytes = len(patch)
		out.Diff, out.Truncated = cut(patch, diffMax)
	}
	writeJSON(w, out)
}

// cut shortens s to at most n bytes, at the end of a line.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i+1]
	}
	return s, true
}

// postRetry and postAbandon are `aipm land retry|abandon`: the same queue calls, by the
// acting human via ui.
func (s *Server) postRetry(w http.ResponseWriter, r *http.Request) {
	s.landAction(w, r, func(q Queue, id string) (*filestore.Task, error) { return q.Retry(s.actor(), id) })
}

func (s *Server) postAbandon(w http.ResponseWriter, r *http.Request) {
	s.landAction(w, r, func(q Queue, id string) (*filestore.Task, error) { return q.Abandon(s.actor(), id) })
}

func (s *Server) landAction(w http.ResponseWriter, r *http.Request, do func(q Queue, id string) (*filestore.Task, error)) {
	if s.o.Queue == nil {
		writeError(w, http.StatusNotFound, "no_git", "the project is not in a Git repository: tasks land no code", "")
		return
	}
	t, err := do(s.o.Queue, r.PathValue("id"))
	if err != nil {
		var fe *filestore.Error
		if errors.As(err, &fe) {
			storeError(w, err)
			return
		}
		// The queue's own refusals (a worktree gone, a landing that cannot be retried)
		// are sentences for the person, as the CLI prints them.
		writeError(w, http.StatusConflict, "land_refused", err.Error(), "")
		return
	}
	writeJSON(w, map[string]any{"task": t.ID, "landing": t.Landing})
}
