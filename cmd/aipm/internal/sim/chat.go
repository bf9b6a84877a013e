package sim

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// simJob is a conversation this agent holds for someone: its task session (a delegation)
// or a human who asked in a message.
type simJob struct {
	kind     string // "ask" or "shiritori"
	target   string
	question string // ask: the question; shiritori: the first word
	rounds   int
	chain    []string
	used     map[string]bool
	mine     int // shiritori words this agent said
	answer   string
	over     bool // the conversation ended before the job did

	convID       string
	delegationID string
	human        string // who asked, when a human did
	plain        bool   // the target is a human: plain messages, no conversation
}

// simPartner is a conversation another agent started with this one.
type simPartner struct {
	kind string
	used map[string]bool
}

func simKind(purpose string) string {
	p := strings.ToLower(strings.TrimSpace(purpose))
	if strings.HasPrefix(p, "shiritori") || strings.Contains(p, "しりとり") {
		return "shiritori"
	}
	return "ask"
}

func (s *simAgent) chatRound() error {
	n, err := s.nextAction()
	if err != nil {
		return err
	}
	switch n.Action {
	case "conversation_request":
		s.partners[n.ConversationID] = &simPartner{kind: simKind(n.Purpose), used: map[string]bool{}}
		early := s.early[n.ConversationID]
		delete(s.early, n.ConversationID)
		for _, m := range early {
			if err := s.answerPartner(m); err != nil {
				return err
			}
		}
		return s.readMessages()
	case "get_pending_messages":
		return s.readMessages()
	case "process_delegation":
		return s.takeDelegation(n)
	case "conversation_ended", "conversation_expired":
		return s.conversationOver(n.ConversationID, n.Action, n.Reason)
	case "wait_for_messages":
		return nil
	case "logout", "exit":
		if err := s.abandonJobs("the chat session ended (" + simOr(n.Reason, n.Action) + ")"); err != nil {
			return err
		}
		return s.logout()
	}
	return fmt.Errorf("sim-agent %s: unexpected chat action %q (state %s)", s.id, n.Action, n.State)
}

// abandonJobs fails the jobs still open when the chat session leaves: their state lives
// only in this process, and a delegation left processing would hold its task session in
// wait_for_delegation for good.
func (s *simAgent) abandonJobs(why string) error {
	var open []*simJob
	for _, j := range s.jobs {
		open = append(open, j)
	}
	for _, j := range s.byHuman {
		open = append(open, j)
	}
	open = append(open, s.queued...)
	s.queued = nil
	slices.SortFunc(open, func(a, b *simJob) int { return strings.Compare(a.target+a.convID, b.target+b.convID) })
	for _, j := range open {
		if j.convID != "" && !j.over {
			if err := s.endConversation(j.convID); err != nil {
				return err
			}
		}
		if err := s.finishJob(j, false, fmt.Sprintf("no answer from %s: %s", j.target, why)); err != nil {
			return err
		}
	}
	return nil
}

type simMessage struct {
	SenderID       string `json:"senderId"`
	Content        string `json:"content"`
	ConversationID string `json:"conversationId"`
}

func (s *simAgent) readMessages() error {
	var r struct {
		PendingMessages []simMessage `json:"pending_messages"`
	}
	if err := s.call("get_pending_messages", nil, &r); err != nil {
		return err
	}
	for _, m := range r.PendingMessages {
		if err := s.onMessage(m); err != nil {
			return err
		}
	}
	return nil
}

func (s *simAgent) onMessage(m simMessage) error {
	where := ""
	if m.ConversationID != "" {
		where = " in " + m.ConversationID
	}
	s.logf("message from %s%s: %s", m.SenderID, where, simClip(m.Content, 200))
	if m.ConversationID != "" {
		if j := s.jobs[m.ConversationID]; j != nil {
			return s.jobReply(j, m.Content)
		}
		return s.answerPartner(m)
	}
	if j := s.byHuman[m.SenderID]; j != nil {
		return s.jobReply(j, m.Content)
	}
	return s.answerHuman(m)
}

// send sends a message; a refusal (the conversation ended meanwhile, say) is logged, not
// fatal.
func (s *simAgent) send(to, content string) error {
	err := s.call("send_message", map[string]any{"target_agent_id": to, "content": simClip(content, simMaxReply)}, nil)
	var te *simToolError
	if errors.As(err, &te) {
		s.logf("could not send to %s: %s", to, te.Code)
		return nil
	}
	if err == nil {
		s.logf("→ %s: %s", to, simClip(content, 200))
	}
	return err
}

func (s *simAgent) endConversation(id string) error {
	err := s.call("end_conversation", map[string]any{"conversation_id": id}, nil)
	var te *simToolError
	if errors.As(err, &te) {
		s.logf("end_conversation %s: %s", id, te.Code)
		return nil
	}
	if err == nil {
		s.logf("ended %s", id)
	}
	return err
}

// answerPartner answers a message of a conversation another agent started.
func (s *simAgent) answerPartner(m simMessage) error {
	p := s.partners[m.ConversationID]
	fresh := p == nil
	if p == nil {
		kind := "ask"
		if w := simKanaWord(m.Content); w != "" && !strings.ContainsFunc(w, func(r rune) bool { return !simIsKana(r) && r != 'ー' }) {
			kind = "shiritori"
		}
		p = &simPartner{kind: kind, used: map[string]bool{}}
		s.partners[m.ConversationID] = p
	}
	if p.kind != "shiritori" {
		return s.reply(m, s.answer(m.Content), fresh)
	}
	heard := simKanaWord(m.Content)
	p.used[heard] = true
	w, ok := simNextWord(heard, p.used)
	if !ok {
		s.logf("no word after %s: I give up", heard)
		if err := s.endConversation(m.ConversationID); err != nil {
			return err
		}
		// Ended here, so no conversation_ended comes for it: a job queued behind it (one
		// this agent wants to start with the same partner) starts now.
		delete(s.partners, m.ConversationID)
		return s.startQueued()
	}
	p.used[w] = true
	return s.reply(m, w, fresh)
}

// reply answers a partner's message. A conversation this agent has not taken yet may
// still be pending (its first message was read with other mail before get_next_action
// offered the request): the refusal then keeps the message for the conversation_request.
func (s *simAgent) reply(m simMessage, content string, fresh bool) error {
	err := s.call("send_message", map[string]any{"target_agent_id": m.SenderID, "content": simClip(content, simMaxReply)}, nil)
	var te *simToolError
	if errors.As(err, &te) {
		if fresh && te.Code == "conversation_required_for_ai_to_ai" {
			s.logf("%s is not accepted yet: answering once it is", m.ConversationID)
			delete(s.partners, m.ConversationID)
			s.early[m.ConversationID] = append(s.early[m.ConversationID], m)
			return nil
		}
		s.logf("could not send to %s: %s", m.SenderID, te.Code)
		return nil
	}
	if err == nil {
		s.logf("→ %s: %s", m.SenderID, simClip(content, 200))
	}
	return err
}

// answer is the sim's answer to a question: what a file it names starts with.
func (s *simAgent) answer(q string) string {
	for _, tok := range strings.Fields(q) {
		for _, cand := range []string{tok, strings.Trim(tok, "?？!！.,。、:;\"'「」()（）`")} {
			full, err := simSafePath(s.root, cand)
			if err != nil {
				continue
			}
			if fi, err := os.Stat(full); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			b, err := os.ReadFile(full)
			if err != nil {
				continue
			}
			first, _, _ := strings.Cut(string(b), "\n")
			return fmt.Sprintf("%s contains %s", cand, simClip(strings.TrimSuffix(first, "\r"), 200))
		}
	}
	return s.name + " here: I don't know about that."
}

// answerHuman handles a message from a human: an ask or shiritori line is done from here;
// otherwise a status question gets the agent's tasks, anything else an acknowledgement.
func (s *simAgent) answerHuman(m simMessage) error {
	for _, d := range simParseScript(m.Content) {
		if d.verb == "ask" || d.verb == "shiritori" {
			return s.startJob(simJobFor(d, m.SenderID))
		}
	}
	if simAsksStatus(m.Content) {
		reply, err := s.statusReport()
		if err != nil {
			return err
		}
		return s.send(m.SenderID, reply)
	}
	return s.send(m.SenderID, fmt.Sprintf("%s here: got “%s”.", s.name, simClip(m.Content, 200)))
}

func simAsksStatus(text string) bool {
	t := strings.ToLower(text)
	for _, k := range []string{"status", "progress", "how is it going", "how's it going", "進捗"} {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

func (s *simAgent) statusReport() (string, error) {
	var r struct {
		Tasks []struct {
			simTask
			TaskID string `json:"task_id"`
		} `json:"tasks"`
		Total int `json:"total_count"`
	}
	if err := s.call("get_my_tasks", nil, &r); err != nil {
		return "", err
	}
	if len(r.Tasks) == 0 {
		return s.name + " here: I have no tasks.", nil
	}
	var parts []string
	for _, t := range r.Tasks {
		parts = append(parts, fmt.Sprintf("%s %s: %s", t.TaskID, t.Title, t.Status))
	}
	out := fmt.Sprintf("%s here: my tasks: %s", s.name, strings.Join(parts, "; "))
	if r.Total > len(r.Tasks) {
		out += fmt.Sprintf(" (and %d more)", r.Total-len(r.Tasks))
	}
	return out, nil
}

func simJobFor(d simDirective, human string) *simJob {
	j := &simJob{kind: d.verb, target: d.agent, question: d.question, human: human, used: map[string]bool{}}
	if d.verb == "shiritori" {
		j.question, j.rounds = d.first, d.rounds
	}
	return j
}

// takeDelegation starts the conversation a delegation asks for.
func (s *simAgent) takeDelegation(n *simNext) error {
	j := &simJob{kind: "ask", target: n.TargetAgentID, question: n.Purpose, used: map[string]bool{}}
	if d, ok := simParseLine(n.Purpose); ok && d.verb == "shiritori" {
		j = simJobFor(d, "")
		j.target = n.TargetAgentID
	} else if q, ok := strings.CutPrefix(n.Purpose, "ask:"); ok {
		j.question = strings.TrimSpace(q)
	}
	j.delegationID = n.DelegationID
	return s.startJob(j)
}

func (s *simAgent) busyWith(agent string) bool {
	for _, j := range s.jobs {
		if j.target == agent {
			return true
		}
	}
	return s.byHuman[agent] != nil
}

// startJob opens the job's conversation with its first message.
func (s *simAgent) startJob(j *simJob) error {
	if s.busyWith(j.target) {
		s.logf("queued a %s with %s: already talking to it", j.kind, j.target)
		s.queued = append(s.queued, j)
		return nil
	}
	args := map[string]any{"target_agent_id": j.target, "purpose": j.kind, "initial_message": j.question}
	if j.delegationID != "" {
		args["delegation_id"] = j.delegationID
	}
	if j.kind == "shiritori" {
		j.chain, j.used, j.mine = []string{j.question}, map[string]bool{simKanaWord(j.question): true}, 1
		if t := 2*j.rounds + 2; t > 20 { // room for every word; the default is 20
			args["max_turns"] = min(t, 40)
		}
	}
	var r struct {
		ConversationID string `json:"conversation_id"`
	}
	err := s.call("start_conversation", args, &r)
	var te *simToolError
	switch {
	case errors.As(err, &te) && te.Code == "cannot_start_conversation_with_human":
		j.plain = true
		s.byHuman[j.target] = j
		return s.send(j.target, j.question)
	case errors.As(err, &te) && te.Code == "conversation_already_active":
		s.logf("queued a %s with %s: %s", j.kind, j.target, te.Message)
		s.queued = append(s.queued, j)
		return nil
	case errors.As(err, &te):
		return s.finishJob(j, false, fmt.Sprintf("could not talk to %s: %s", j.target, te.Message))
	case err != nil:
		return err
	}
	j.convID = r.ConversationID
	s.jobs[j.convID] = j
	s.logf("started %s with %s (%s): %s", r.ConversationID, j.target, j.kind, simClip(j.question, 80))
	return nil
}

// jobReply takes the partner's answer in a job's conversation.
func (s *simAgent) jobReply(j *simJob, content string) error {
	if j.kind != "shiritori" {
		j.answer = strings.TrimSpace(content)
		if !j.plain && !j.over {
			if err := s.endConversation(j.convID); err != nil {
				return err
			}
		}
		return s.finishJob(j, true, j.answer)
	}
	heard := simKanaWord(content)
	j.chain = append(j.chain, heard)
	j.used[heard] = true
	if j.over || j.mine >= j.rounds {
		return s.endJob(j)
	}
	w, ok := simNextWord(heard, j.used)
	if !ok {
		s.logf("no word after %s: I give up", heard)
		return s.endJob(j)
	}
	j.chain = append(j.chain, w)
	j.used[w] = true
	j.mine++
	return s.send(j.target, w)
}

// endJob ends a finished shiritori's conversation and reports the chain.
func (s *simAgent) endJob(j *simJob) error {
	if !j.plain && !j.over {
		if err := s.endConversation(j.convID); err != nil {
			return err
		}
	}
	return s.finishJob(j, true, strings.Join(j.chain, " → "))
}

// conversationOver handles the end (or expiry) of a conversation.
func (s *simAgent) conversationOver(id, how, reason string) error {
	j := s.jobs[id]
	if j == nil {
		delete(s.partners, id)
		return s.startQueued()
	}
	// The partner ended it, or max_turns or a timeout did: read what it said last.
	j.over = true
	if err := s.readMessages(); err != nil {
		return err
	}
	if s.jobs[id] != j {
		return nil // the last message finished the job
	}
	if reason == filestore.EndDuplicate && (j.kind != "shiritori" || len(j.chain) <= 1) {
		// A merge kept the pair's other conversation: ask again once that one ends.
		delete(s.jobs, id)
		j.convID, j.over, j.chain, j.used, j.mine = "", false, nil, nil, 0
		s.logf("%s ended as a duplicate: the %s with %s starts again", id, j.kind, j.target)
		return s.startJob(j)
	}
	if j.kind == "shiritori" && len(j.chain) > 1 {
		return s.finishJob(j, true, strings.Join(j.chain, " → "))
	}
	return s.finishJob(j, false, fmt.Sprintf("the conversation with %s %s before an answer", j.target, strings.TrimPrefix(how, "conversation_")))
}

// finishJob reports a job's outcome to whoever asked and starts what waited for it.
func (s *simAgent) finishJob(j *simJob, ok bool, result string) error {
	if j.convID != "" {
		delete(s.jobs, j.convID)
	}
	if s.byHuman[j.target] == j {
		delete(s.byHuman, j.target)
	}
	result = simClip(result, simMaxReply)
	switch {
	case j.delegationID != "":
		status := filestore.DelegationCompleted
		if !ok {
			status = filestore.DelegationFailed
		}
		err := s.call("report_delegation_completed", map[string]any{"delegation_id": j.delegationID, "result": result, "status": status}, nil)
		var te *simToolError
		switch {
		case errors.As(err, &te) && te.Code == "delegation_already_finished":
			// Ended without us (its target was made inactive, say): nothing to report.
			s.logf("%s already finished: %s", j.delegationID, te.Message)
		case err != nil:
			return err
		default:
			s.logf("reported %s %s: %s", j.delegationID, status, result)
		}
	case j.human != "":
		if j.kind == "ask" && ok {
			result = j.target + ": " + result
		}
		if err := s.send(j.human, result); err != nil {
			return err
		}
	}
	return s.startQueued()
}

func (s *simAgent) startQueued() error {
	for i := 0; i < len(s.queued); i++ {
		if j := s.queued[i]; !s.busyWith(j.target) {
			s.queued = slices.Delete(s.queued, i, i+1)
			return s.startJob(j)
		}
	}
	return nil
}
