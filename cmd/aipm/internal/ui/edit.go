package ui

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// The page's task forms: New task and Edit, the store calls of `aipm task add` (CreateTask)
// and `aipm task edit` (EditTask), by the acting human. Task ids in them may be written
// short, as on the command line: a unique prefix, with or without tsk_.

// taskRef expands a task id the human typed: the whole id, or the one id it starts.
func (s *Server) taskRef(arg string) (string, error) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if arg == "" {
		return "", nil
	}
	want := arg
	if !strings.HasPrefix(want, filestore.PrefixTask+"_") {
		want = filestore.PrefixTask + "_" + want
	}
	set, err := s.o.Store.TaskIDSet()
	if err != nil {
		return "", err
	}
	switch m := set.WithPrefix(want); len(m) {
	case 1:
		return m[0], nil
	case 0:
		return "", &filestore.Error{Kind: filestore.ErrNotFound, Code: "task_not_found",
			Message: "no task " + clip(arg, 40), Hint: "give a task id as the board shows it (tsk_8001)"}
	default:
		return "", &filestore.Error{Kind: filestore.ErrInvalid, Code: "ambiguous_id",
			Message: "task id " + clip(arg, 40) + " names " + strconv.Itoa(len(m)) + " tasks", Hint: "give more of its characters"}
	}
}

func (s *Server) taskRefs(args []string) ([]string, error) {
	out := []string{}
	for _, a := range args {
		if strings.TrimSpace(a) == "" {
			continue
		}
		id, err := s.taskRef(a)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// postCreate is New task: aipm task add.
func (s *Server) postCreate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title        string   `json:"title"`
		Description  string   `json:"description"`
		Priority     string   `json:"priority"`
		Status       string   `json:"status"`
		Assignee     string   `json:"assignee"`
		Parent       string   `json:"parent"`
		Dependencies []string `json:"dependencies"`
	}
	if !readBody(w, r, &body) {
		return
	}
	n := filestore.NewTask{Title: body.Title, Description: body.Description, Priority: body.Priority,
		Status: body.Status, AssigneeID: body.Assignee}
	var err error
	if n.ParentID, err = s.taskRef(body.Parent); err != nil {
		storeError(w, err)
		return
	}
	if n.Dependencies, err = s.taskRefs(body.Dependencies); err != nil {
		storeError(w, err)
		return
	}
	t, err := s.o.Store.CreateTask(s.actor(), n)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, t)
}

// postEdit is Edit: aipm task edit. A field left out of the body is left as it is;
// dependencies, when given, replace the list.
func (s *Server) postEdit(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title        *string   `json:"title"`
		Description  *string   `json:"description"`
		Priority     *string   `json:"priority"`
		Dependencies *[]string `json:"dependencies"`
	}
	if !readBody(w, r, &body) {
		return
	}
	e := filestore.TaskEdit{Title: body.Title, Description: body.Description, Priority: body.Priority}
	if body.Dependencies != nil {
		deps, err := s.taskRefs(*body.Dependencies)
		if err != nil {
			storeError(w, err)
			return
		}
		e.Dependencies = &deps
	}
	t, fields, err := s.o.Store.EditTask(s.actor(), r.PathValue("id"), e)
	if err != nil {
		storeError(w, err)
		return
	}
	if fields == nil {
		fields = []string{}
	}
	writeJSON(w, map[string]any{"task": t, "updated_fields": fields})
}

// move is a status the table offers a task, and why the rules refuse it now ("" when
// they take it).
type move struct {
	Status string `json:"status"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	Hint   string `json:"hint,omitempty"`
}

// moves are the status moves of a task, by the store's rules (StatusMoves).
func (s *Server) moves(id string) ([]move, error) {
	ms, err := s.o.Store.StatusMoves(id)
	if err != nil {
		return nil, err
	}
	out := make([]move, 0, len(ms))
	for _, m := range ms {
		mv := move{Status: m.Status, OK: m.Refusal == nil}
		if m.Refusal != nil {
			mv.Reason, mv.Hint = m.Refusal.Message, m.Refusal.Hint
		}
		out = append(out, mv)
	}
	return out, nil
}

func (s *Server) getMoves(w http.ResponseWriter, r *http.Request) {
	ms, err := s.moves(r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, ms)
}
