package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/watch"
)

// keepInterval is how often a running process looks at open conversations: a deadline
// (pending or active timeout) or a gone side's grace (session_expired) is written to the
// conversation file within this long of passing, by whichever process looks first.
const keepInterval = time.Second

// KeepConversations applies conversation deadlines and session expiries until ctx ends
// (SPEC §4.6): every keepInterval while a conversation is pending or active, and otherwise
// only once a conversation file changes. Readers apply timeouts lazily as well; this makes
// the files true when nobody reads them — `git diff`, a human, the coordinator's work
// detection. The store writes each change once, under the lock, however many processes
// notice it at the same moment.
func KeepConversations(ctx context.Context, st *filestore.Store, hub *watch.Hub, logf func(string, ...any)) {
	sub := hub.Subscribe("conversations/")
	defer sub.Close()
	timer := time.NewTimer(0)
	defer timer.Stop()
	last := "" // the last error logged: a broken file is reported once, not every second
	for {
		_, open, err := st.ApplyConversationDeadlines()
		if err != nil {
			if err.Error() != last {
				logf("conversation deadlines: %v", err)
			}
			last = err.Error()
			open = true // look again later
		} else {
			last = ""
		}
		var tick <-chan time.Time
		if open {
			timer.Reset(keepInterval)
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
		case <-tick:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}
