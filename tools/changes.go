package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/msg"
)

// Change-derived notifications (SPEC §7): when someone other than the agent changes a
// task its task session is working on — a manager's tool call, `aipm task status`, a human
// editing tasks/<id>.json in an editor, a `git pull` — the session gets an interrupt
// (blocked, cancelled, taken away) or a status_change (anything else). The process that
// serves the session notices it through its watcher, so a change made by any means is
// caught; the notification key names the change, so it is recorded once.

// taskSig is what a session last saw of a task.
type taskSig struct {
	status, assignee, blockedReason, title, description, priority string
	version                                                       int
	changedBy                                                     string
}

func sigOf(t *filestore.Task) taskSig {
	return taskSig{status: t.Status, assignee: t.AssigneeID, blockedReason: t.BlockedReason, title: t.Title,
		description: t.Description, priority: t.Priority, version: t.Version, changedBy: t.StatusChangedBy}
}

// Run derives notifications from changes of tasks and of the project until ctx ends. It
// sleeps on the hub, so it costs nothing while nothing changes.
func (s *Server) Run(ctx context.Context) {
	go s.runMessages(ctx)
	sub := s.hub.SubscribePaths("tasks/", "project.json")
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
		}
		s.deriveNotifications(sub.Paths())
	}
}

// changedTasks returns the task ids a batch of changed paths names, and false when the
// batch may hold anything else that matters (the project, a rescan, the directory).
func changedTasks(paths []string) ([]string, bool) {
	var ids []string
	for _, p := range paths {
		id, ok := strings.CutPrefix(p, "tasks/")
		if !ok {
			return nil, false
		}
		id, ok = strings.CutSuffix(id, ".json")
		if !ok || strings.Contains(id, "/") {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// concerns reports whether a change of the tasks ids can matter to the session: one of
// them is a task it saw before, a task of its agent in its task's sub-tree, or a sub-task
// it handed to someone else (its parent is a task the session saw).
func (s *Server) concerns(sessionID, agentID, taskID string, ids []string) bool {
	s.mu.Lock()
	if s.settling[sessionID] {
		s.mu.Unlock()
		return true
	}
	seen := s.seen[sessionID]
	for _, id := range ids {
		_, ok := seen[id]
		_, handed := seen[delegatedKey+id]
		if ok || handed {
			s.mu.Unlock()
			return true
		}
	}
	s.mu.Unlock()
	// The index says whom a task concerns: no file of a task another agent changed is
	// read for it.
	tasks, err := s.store.TaskRefs(ids)
	if err != nil {
		return true
	}
	for _, t := range tasks {
		if t.AssigneeID != agentID {
			s.mu.Lock()
			_, parentSeen := s.seen[sessionID][t.ParentID]
			s.mu.Unlock()
			if parentSeen && t.ParentID != "" {
				return true
			}
			continue
		}
		if in, err := s.store.InSubtree(taskID, t.ID); err != nil || in {
			return true
		}
	}
	return false
}

// delegatedKey prefixes, in a session's seen map, the sub-tasks it handed to other agents:
// they are watched for blocks only, apart from its own tasks.
const delegatedKey = "handed:"

// watchedTasks are the tasks a task session works on: its own task and the sub-tasks of it
// assigned to its agent; and, apart, the sub-tasks of those assigned to other agents (a
// manager's workers), whose blocks it is told of (seed 000 UC3).
func (s *Server) watchedTasks(se *filestore.Session) (own, handed map[string]*filestore.Task, err error) {
	root, err := s.store.Task(se.TaskID)
	if err != nil {
		return nil, nil, err
	}
	own = map[string]*filestore.Task{root.ID: root}
	handed = map[string]*filestore.Task{}
	// Breadth first, so a parent is classified before its children.
	mine := map[string]bool{root.ID: true}
	subs, err := s.store.SubtreeWhere(root.ID, func(t *filestore.Task) bool {
		if t.AssigneeID == se.AgentID {
			mine[t.ID] = true
			return true
		}
		return mine[t.ParentID]
	})
	if err != nil {
		return nil, nil, err
	}
	for _, t := range subs {
		if t.AssigneeID == se.AgentID {
			own[t.ID] = t
		} else {
			handed[t.ID] = t
		}
	}
	return own, handed, nil
}

// changedWalkBound is the most changed tasks changedWatched looks at one by one; more
// are compared by walking the sub-tree.
const changedWalkBound = 64

// changedWatched is watchedTasks for a session whose tasks, apart from ids, are as it saw
// them last: only the tasks among ids (and its own task, always) are classified and
// copied, from the index, so a derivation after a write of one sub-task costs that
// sub-task, not the whole sub-tree. Whether a task is watched depends on its place in the
// sub-tree, its assignee and its parent's, so a changed task with sub-tasks of its own
// (moved by hand, or given to someone else) may have changed whether its sub-tasks are
// watched without changing them: then it returns nil maps, and the caller walks the
// sub-tree. Its own task does not count: below it, everything is measured from it.
func (s *Server) changedWatched(se *filestore.Session, ids []string) (own, handed map[string]*filestore.Task, err error) {
	refs, err := s.store.SubtreeRefs(se.TaskID, append(slices.Clip(ids), se.TaskID))
	if err != nil {
		return nil, nil, err
	}
	var want []string
	isOwn := map[string]bool{}
	for _, r := range refs {
		if r.HasChildren && r.ID != se.TaskID {
			return nil, nil, nil
		}
		switch {
		case r.ID == se.TaskID || r.AssigneeID == se.AgentID:
			isOwn[r.ID] = true
		case r.ParentID == se.TaskID || r.ParentAssignee == se.AgentID:
		default:
			continue // below a task handed to someone else: not the session's to watch
		}
		want = append(want, r.ID)
	}
	tasks, err := s.store.TasksByID(want)
	if err != nil {
		return nil, nil, err
	}
	own, handed = map[string]*filestore.Task{}, map[string]*filestore.Task{}
	for _, t := range tasks {
		if isOwn[t.ID] {
			own[t.ID] = t
		} else {
			handed[t.ID] = t
		}
	}
	if own[se.TaskID] == nil {
		// Its own task is gone or unreadable: the walk reports why.
		return nil, nil, nil
	}
	return own, handed, nil
}

// remember records what a new task session sees now, the baseline of later changes.
func (s *Server) remember(se *filestore.Session) {
	if se.Purpose != filestore.PurposeTask {
		return
	}
	// With nothing seen before, a derivation only records the baseline.
	if err := s.deriveFor(se); err != nil {
		s.log("watch tasks of %s: %v", se.ID, err)
	}
}

func (s *Server) deriveNotifications(paths []string) {
	s.mu.Lock()
	served := len(s.owned)
	s.mu.Unlock()
	if served == 0 {
		return
	}
	ids, onlyTasks := changedTasks(paths)
	if !onlyTasks {
		s.notePause()
	}
	concerned := func(id string, o ownedSession) bool { return !onlyTasks || s.concerns(id, o.agent, o.taskID, ids) }
	for _, se := range s.served(filestore.PurposeTask, concerned) {
		if err := s.deriveFor(se); err != nil {
			s.log("notifications for %s: %v", se.ID, err)
		}
	}
}

// notePause sends the pause interrupt when project.json says paused: a pause made by hand
// in the file is told like one made with the CLI (SetProjectStatus), and the notification
// key keeps either from being told twice.
func (s *Server) notePause() {
	p, err := s.store.Project()
	if err != nil || p.Status != filestore.ProjectPaused {
		return
	}
	if _, err := s.store.NotifyProjectPaused(filestore.Actor{ID: p.OwnerID, Via: filestore.ViaFile}); err != nil {
		s.log("notify pause: %v", err)
	}
}

// deriveFor compares the session's tasks with what it saw last and notifies it of changes
// made by others.
func (s *Server) deriveFor(se *filestore.Session) (err error) {
	// One derivation at a time: a caller that finds nothing new must also find the
	// notification another one is still writing.
	s.deriveMu.Lock()
	defer s.deriveMu.Unlock()
	// Nothing to compare while no task that concerns the session changed since the last
	// derivation: every call of the session asks (hasInterrupt), and most find its tasks
	// as they were, whatever the rest of the team changed.
	s.mu.Lock()
	last, derived := s.derivedAt[se.ID]
	s.mu.Unlock()
	var gen uint64
	var genErr error
	var tasks, handed map[string]*filestore.Task
	if derived {
		var ids []string
		var ok bool
		ids, gen, ok, genErr = s.store.TasksChangedSince(last)
		if ok && (len(ids) == 0 || !s.concerns(se.ID, se.AgentID, se.TaskID, ids)) {
			s.mu.Lock()
			s.derivedAt[se.ID] = gen
			s.mu.Unlock()
			return nil
		}
		if ok && len(ids) <= s.walkBound {
			tasks, handed, err = s.changedWatched(se, ids)
			if err != nil {
				return err
			}
			if tasks != nil {
				s.mu.Lock()
				s.derivedChanged++
				s.mu.Unlock()
			}
		}
	} else {
		gen, genErr = s.store.TasksGeneration()
	}
	if tasks == nil {
		if tasks, handed, err = s.watchedTasks(se); err != nil {
			return err
		}
	}
	// A block cascades from the deepest sub-task up and reaches the blocked task last: a
	// sub-task blocked by a cascade whose cause is not blocked yet is the middle of one
	// change, compared once the cause is written (the next derivation looks again).
	inFlight := s.cascadesInFlight(tasks)
	s.mu.Lock()
	if len(inFlight) > 0 {
		s.settling[se.ID] = true
	} else {
		delete(s.settling, se.ID)
	}
	s.mu.Unlock()
	defer func() {
		if err == nil && genErr == nil && len(inFlight) == 0 {
			s.mu.Lock()
			s.derivedAt[se.ID] = gen
			s.mu.Unlock()
		}
	}()
	s.mu.Lock()
	seen := s.seen[se.ID]
	if seen == nil {
		seen = map[string]taskSig{}
		s.seen[se.ID] = seen
	}
	// What the session saw before, of the tasks compared now.
	prev := make(map[string]taskSig, len(tasks)+len(handed))
	for id, t := range tasks {
		if inFlight[id] {
			continue
		}
		if sig, ok := seen[id]; ok {
			prev[id] = sig
		}
		seen[id] = sigOf(t)
	}
	for id, t := range handed {
		if sig, ok := seen[delegatedKey+id]; ok {
			prev[delegatedKey+id] = sig
		}
		seen[delegatedKey+id] = sigOf(t)
	}
	s.mu.Unlock()
	// While the task itself is blocked or cancelled, what happens to its sub-tasks (the
	// cascade, written a moment later) is part of that one interrupt.
	st := tasks[se.TaskID].Status
	mainStopped := st == filestore.StatusBlocked || st == filestore.StatusCancelled
	lang, langRead := "", false
	for id, t := range tasks {
		old, ok := prev[id]
		cur := sigOf(t)
		if !ok || old == cur || (mainStopped && id != se.TaskID) || inFlight[id] {
			continue
		}
		// The notice is written in the project's language of the moment it is made.
		if !langRead {
			lang, langRead = s.store.ProjectLanguage(), true
		}
		ev, err := s.changeEvent(se, t, old, cur)
		if err != nil {
			return err
		}
		if n := changeNotice(lang, se, t, old, cur, ev, s.assignedBy); n != nil {
			if _, _, err := s.store.AddNotification(filestore.Actor{ID: "system", Via: filestore.ViaFile}, *n); err != nil {
				return err
			}
		}
	}
	if mainStopped {
		return nil
	}
	for id, t := range handed {
		old, ok := prev[delegatedKey+id]
		n := handedBlockNotice(se, t, old, ok)
		if n == nil {
			continue
		}
		if !langRead {
			lang, langRead = s.store.ProjectLanguage(), true
		}
		who := t.StatusChangedBy
		if ok && old.version == t.Version {
			who = msg.Text(lang, "change.by_hand", t.ID)
		}
		n.Message = msg.Text(lang, "change.handed_blocked", t.ID, t.Title, t.AssigneeID, who, orNone(lang, t.BlockedReason))
		n.Instruction = msg.Text(lang, "change.handed_blocked_instruction")
		if _, _, err := s.store.AddNotification(filestore.Actor{ID: "system", Via: filestore.ViaFile}, *n); err != nil {
			return err
		}
	}
	return nil
}

// cascadeSettle is how long a sub-task blocked by a cascade whose cause is not blocked
// waits for it: longer, and the writer of the cascade died part-way (LiftCascades undoes
// such a block), so the sub-task is compared as it is.
const cascadeSettle = 5 * time.Second

// cascadesInFlight returns the tasks among tasks that a block cascade reached a moment
// ago while its cause, written last, is not blocked yet.
func (s *Server) cascadesInFlight(tasks map[string]*filestore.Task) map[string]bool {
	var out map[string]bool
	now := s.store.Now()
	for id, t := range tasks {
		if t.Status != filestore.StatusBlocked || t.CascadeFrom == "" || t.StatusChangedAt == nil || now.Sub(*t.StatusChangedAt) > cascadeSettle {
			continue
		}
		cause := ""
		if c := tasks[t.CascadeFrom]; c != nil {
			cause = c.Status
		} else if refs, err := s.store.TaskRefs([]string{t.CascadeFrom}); err == nil && len(refs) == 1 {
			cause = refs[0].Status
		} else {
			continue
		}
		if cause != filestore.StatusBlocked {
			if out == nil {
				out = map[string]bool{}
			}
			out[id] = true
		}
	}
	return out
}

// handedBlockNotice is the notification that a sub-task the session handed to another
// agent was blocked (seed 000 UC3: the manager is told of its worker's block), without
// its texts; nil when there is nothing to tell. old is what the session saw of the task
// before (ok false: nothing); a sub-task first seen already blocked counts if the block
// came after the session started. A block by the session's own agent, or one cascaded
// from a block above (told by its own notice), is not told.
func handedBlockNotice(se *filestore.Session, t *filestore.Task, old taskSig, ok bool) *filestore.Notification {
	if t.Status != filestore.StatusBlocked || t.CascadeFrom != "" || t.StatusChangedBy == se.AgentID {
		return nil
	}
	if ok && old.status == filestore.StatusBlocked {
		return nil
	}
	if !ok && (t.StatusChangedAt == nil || t.StatusChangedAt.Before(se.CreatedAt)) {
		return nil
	}
	from := t.StatusChangedBy
	if filestore.ValidateAgentID(from) != nil {
		from = ""
	}
	return &filestore.Notification{TargetAgentID: se.AgentID, TargetPurpose: filestore.PurposeTask, TargetSessionID: se.ID,
		TaskID: t.ID, FromAgentID: from, Type: filestore.NotifyStatusChange, Action: filestore.ActionBlocked,
		Key: fmt.Sprintf("handed:%s:blocked:v%d:%s", t.ID, t.Version, se.ID)}
}

// changeEvent returns the history event of a change made through aipm when the notice
// needs what only the history says (nil otherwise): who edited title, description or
// priority, whether a status change by the session's own agent came from its chat session
// at a superior's request (update_task_from_chat) rather than from the session itself, and
// the reason given for a cancel.
func (s *Server) changeEvent(se *filestore.Session, t *filestore.Task, old, cur taskSig) (*filestore.Event, error) {
	if cur.version == old.version {
		return nil, nil // a hand edit: the history has nothing on it
	}
	statusMoved := cur.status != old.status
	edited := cur.title != old.title || cur.description != old.description || cur.priority != old.priority
	if !(statusMoved && (cur.status == filestore.StatusCancelled || cur.changedBy == se.AgentID)) && !(!statusMoved && cur.assignee == old.assignee && edited) {
		return nil, nil
	}
	return s.store.LastEventOf(t, func(e *filestore.Event) bool { return e.Change == "status" || e.Change == "updated" })
}

// changeNotice is the notification for a change of task t from old to cur, or nil when
// there is nothing to tell: the session's own change, a change through aipm of fields a
// session does not act on, or any change of a task no longer the agent's. ev is the
// change's history event, if changeEvent found one; assignedBy finds who made an
// assignment. Its sentences are in lang.
func changeNotice(lang string, se *filestore.Session, t *filestore.Task, old, cur taskSig, ev *filestore.Event, assignedBy func(id string) string) *filestore.Notification {
	if cur.assignee != se.AgentID && old.assignee != se.AgentID {
		return nil // no longer the agent's: it was told when the task was taken away
	}
	byHand := cur.version == old.version // a writer through aipm always bumps the version
	moved := cur.status != old.status || cur.assignee != old.assignee
	edited := cur.title != old.title || cur.description != old.description || cur.priority != old.priority
	// The session's own agent, but from its chat session at a superior's request.
	fromChat := ev != nil && ev.RequesterID != "" && ev.Actor == se.AgentID
	who, from := cur.changedBy, ""
	switch {
	case byHand:
		who = msg.Text(lang, "change.by_hand", t.ID)
	case !moved && !edited:
		return nil
	case !moved:
		// title, description or priority, through aipm (update_task_from_chat)
		who = msg.Text(lang, "change.someone")
		if ev != nil {
			who, from = ev.Actor, ev.Actor
		}
		if fromChat {
			who, from = msg.Text(lang, "change.own_chat", ev.RequesterID), ev.RequesterID
		}
	case cur.status != old.status && who == se.AgentID && !fromChat:
		return nil // its own change
	case cur.status != old.status:
		from = who
		if fromChat {
			who, from = msg.Text(lang, "change.own_chat", ev.RequesterID), ev.RequesterID
		}
	default:
		// an assignment: the file does not say who, the history does
		who = assignedBy(t.ID)
		from = who
		if who == "" {
			who = msg.Text(lang, "change.manager")
		}
	}
	reason := ""
	if ev != nil && ev.Change == "status" && ev.To == filestore.StatusCancelled {
		reason = ev.Reason
	}
	main := t.ID == se.TaskID
	what := msg.Text(lang, "change.task")
	if !main {
		what = msg.Text(lang, "change.subtask")
	}
	n := &filestore.Notification{TargetAgentID: se.AgentID, TargetPurpose: filestore.PurposeTask, TargetSessionID: se.ID,
		TaskID: t.ID, FromAgentID: from, Type: filestore.NotifyStatusChange, Action: "status_change",
		Key: fmt.Sprintf("task:%s:%s>%s:%s:v%d:%s", t.ID, old.status, cur.status, cur.assignee, cur.version, se.ID)}
	if byHand {
		n.Key += ":" + cur.title + "|" + cur.priority + "|" + fmt.Sprint(len(cur.description))
	}
	switch {
	case cur.assignee != se.AgentID && old.assignee == se.AgentID:
		n.Type, n.Action = filestore.NotifyInterrupt, filestore.ActionCancel
		n.Message = msg.Text(lang, "change.reassigned", what, t.ID, t.Title, orAssignee(lang, cur.assignee), who)
		n.Instruction = msg.Text(lang, "change.stop_subtask")
		if main {
			n.Instruction = msg.Text(lang, "change.stop_logout")
		}
	case cur.status == filestore.StatusBlocked && old.status != cur.status:
		n.Type, n.Action = filestore.NotifyInterrupt, filestore.ActionBlocked
		n.Message = msg.Text(lang, "change.blocked", what, t.ID, t.Title, who, orNone(lang, cur.blockedReason))
		n.Instruction = msg.Text(lang, "change.stop_subtask")
		if main {
			// get_next_action, not report_completed at once: the block may be lifted before
			// the agent reacts, and a late report would block the task again.
			n.Instruction = msg.Text(lang, "change.stop_blocked")
		}
	case cur.status == filestore.StatusCancelled && old.status != cur.status:
		n.Type, n.Action = filestore.NotifyInterrupt, filestore.ActionCancel
		n.Message = msg.Text(lang, "change.cancelled", what, t.ID, t.Title, who)
		if reason != "" {
			n.Message = msg.Text(lang, "change.cancelled_reason", what, t.ID, t.Title, who, reason)
		}
		n.Instruction = msg.Text(lang, "change.stop_subtask")
		if main {
			n.Instruction = msg.Text(lang, "change.stop_logout")
		}
	case cur.status != old.status:
		n.Message = msg.Text(lang, "change.status", what, t.ID, t.Title, old.status, cur.status, who)
		n.Instruction = msg.Text(lang, "change.go_on")
	default:
		n.Message = msg.Text(lang, "change.edited", what, t.ID, t.Title, who)
		n.Instruction = msg.Text(lang, "change.reread")
	}
	return n
}

// assignedBy is who made the latest assignment of a task, from the history ("" if it
// cannot tell). LastEvent reads under the store lock, so the event written with the task
// file is there even if the watcher saw the file first.
func (s *Server) assignedBy(id string) string {
	ev, err := s.store.LastEvent(id, func(e *filestore.Event) bool { return e.Change == "assignee" })
	if err != nil || ev == nil {
		return ""
	}
	return ev.Actor
}
