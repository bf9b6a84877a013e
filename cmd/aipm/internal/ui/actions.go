package ui

import (
	"net/http"

	"github.com/aipm/aipm/filestore"
)

// The buttons of the page. Each is one store call by the acting human, the call the
// matching CLI command makes (aipm task status|assign|approve|reject, aipm chat
// send|open|close, aipm project pause|resume), so the same rules hold and the history
// records the same actor. Each answers what the store returned; the page redraws from the
// change event that the write causes, like any other process's write.

func (s *Server) postStatus(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if !readBody(w, r, &body) {
		return
	}
	ch, err := s.o.Store.SetTaskStatus(s.actor(), r.PathValue("id"), body.Status, body.Reason)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"task": ch.Task, "previous_status": ch.Previous, "cascaded": ch.Cascaded})
}

func (s *Server) postAssign(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Assignee string `json:"assignee"` // "" unassigns
	}
	if !readBody(w, r, &body) {
		return
	}
	t, err := s.o.Store.AssignTask(s.actor(), r.PathValue("id"), body.Assignee)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, t)
}

func (s *Server) postApprove(w http.ResponseWriter, r *http.Request) {
	t, err := s.o.Store.ApproveTask(s.actor(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, t)
}

func (s *Server) postReject(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	if !readBody(w, r, &body) {
		return
	}
	t, err := s.o.Store.RejectTask(s.actor(), r.PathValue("id"), body.Reason)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, t)
}

func (s *Server) postSend(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content string `json:"content"`
		TaskID  string `json:"task_id"`
	}
	if !readBody(w, r, &body) {
		return
	}
	sent, err := s.o.Store.SendMessage(s.actor(), filestore.SendRequest{To: r.PathValue("agent"), Content: body.Content, RelatedTaskID: body.TaskID})
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, sent.Message)
}

// postRead marks the human's unread messages read once the page has shown all of them:
// the read cursor is one offset for the whole mailbox, so an unread message from anyone
// but this agent keeps them all unread (as `aipm chat log AGENT` does).
func (s *Server) postRead(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	msgs, next, err := s.o.Store.Unread(s.o.Human)
	if err != nil {
		storeError(w, err)
		return
	}
	for _, m := range msgs {
		if m.SenderID != agent {
			writeJSON(w, map[string]any{"marked_read": false, "unread": len(msgs)})
			return
		}
	}
	if len(msgs) > 0 {
		if err := s.o.Store.MarkRead(s.o.Human, next); err != nil {
			storeError(w, err)
			return
		}
	}
	writeJSON(w, map[string]any{"marked_read": len(msgs) > 0, "unread": 0})
}

// postInboxRead marks every unread message of the human read, as `aipm chat log` with no
// agent does after showing them: the page showed them in its attention list.
func (s *Server) postInboxRead(w http.ResponseWriter, r *http.Request) {
	msgs, err := s.o.Store.TakeUnread(s.o.Human)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"marked_read": len(msgs)})
}

func (s *Server) postOpen(w http.ResponseWriter, r *http.Request) {
	st, err := s.o.Store.OpenChat(s.actor(), r.PathValue("agent"))
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, st)
}

func (s *Server) postClose(w http.ResponseWriter, r *http.Request) {
	st, err := s.o.Store.CloseChat(s.actor(), r.PathValue("agent"))
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, st)
}

// postProject pauses or resumes the project: /api/project/paused or /api/project/active.
func (s *Server) postProject(w http.ResponseWriter, r *http.Request) {
	to := r.PathValue("status")
	if to != filestore.ProjectPaused && to != filestore.ProjectActive {
		writeError(w, http.StatusBadRequest, "invalid_argument", "unknown project status "+clip(to, 40),
			"use "+filestore.ProjectPaused+" or "+filestore.ProjectActive)
		return
	}
	ch, err := s.o.Store.SetProjectStatus(s.actor(), to)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"project": ch.Project.Name, "previous": ch.Previous, "status": ch.Project.Status, "notified": ch.Notified})
}
