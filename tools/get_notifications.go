package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type notificationsResult struct {
	Notifications []filestore.Notification `json:"notifications"`
	Count         int                      `json:"count"`
	Instruction   string                   `json:"instruction"`
}

func getNotificationsTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_notifications", opts(writes(),
			mcp.WithDescription("Your session's unread notifications, interrupts first, then newest first, each with what to do. Reading marks them read (mark_as_read, default true)."),
			mcp.WithBoolean("mark_as_read", mcp.Description("Mark them read (default true)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			mark, err := c.optBool("mark_as_read", true)
			if err != nil {
				return nil, err
			}
			// Changes the watcher has not turned into notifications yet are listed too.
			if c.session.Purpose == filestore.PurposeTask {
				if err := c.srv.deriveFor(c.session); err != nil {
					c.srv.log("notifications for %s: %v", c.session.ID, err)
				}
			}
			st := c.srv.store
			var ns []filestore.Notification
			if mark {
				ns, err = st.TakeNotifications(c.session)
			} else {
				ns, err = st.SessionNotifications(c.session, true)
			}
			if err != nil {
				return nil, err
			}
			c.sum = nil // the envelope counts again after this
			out := notificationsResult{Notifications: nonNil(ns), Count: len(ns), Instruction: c.text("get_notifications.none")}
			if len(ns) > 0 {
				out.Instruction = c.text("get_notifications.some")
			}
			return out, nil
		},
	}
}
