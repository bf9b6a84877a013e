package main

// taskApprove is `aipm task approve ID`: the acting human, an ancestor of the task's
// assignee, approves a pending task request so that it can start.
func (a *app) taskApprove(args []string) error {
	fs := newFlags(a, "task approve")
	s, actor, id, err := a.openOneAs(fs, args, "ID", taskID)
	if err != nil {
		return err
	}
	t, err := s.ApproveTask(actor, id)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(t)
	}
	a.printf("%s: approved by %s (assignee %s)\n", t.ID, t.ApprovedBy, orDash(t.AssigneeID))
	return nil
}

// taskReject is `aipm task reject ID --reason R`: the acting human, an ancestor of the
// task's assignee, rejects a pending task request; it can then never start.
func (a *app) taskReject(args []string) error {
	fs := newFlags(a, "task reject")
	reason := fs.String("reason", "", "why, for the assignee and the requester")
	s, actor, id, err := a.openOneAs(fs, args, "ID [--reason R]", taskID)
	if err != nil {
		return err
	}
	t, err := s.RejectTask(actor, id, *reason)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(t)
	}
	line := t.ID + ": rejected"
	if t.RejectedReason != "" {
		line += " (" + t.RejectedReason + ")"
	}
	a.printf("%s\n", line)
	return nil
}
